/**
 * bench/logs: a step that prints 1 GiB, through `runner exec` (its output
 * read, lines masked, the first 100 MiB kept in the step's log, the console
 * fed), against `docker run` of the same container with its output into
 * /dev/null, alternated in one run: the runner's speed as a share of docker's
 * (aim: 0.7 or more) and the runner's peak memory (aim: under 200 MB).
 *
 *   make bench     (or: node dist/bench/logs.js [ROUNDS] [MIB])
 */
import { spawn } from 'node:child_process';
import { CLI, IMAGE, makeProject, watchPeakMemory, writePipeline } from '../test/fixtures/project.js';
import { median, report, timed } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 3);
const MIB = Number(process.argv[3] ?? 1024);
// 64-byte lines, as a build or a test runner prints them
const PRINT = `yes 'a line of step output, as a build or a test runner would print it' | head -c ${MIB}M`;

function run(cmd: string, args: string[], onPid?: (pid: number) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CI: 'true' } });
    if (c.pid) onPid?.(c.pid);
    let err = '';
    c.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-2000)));
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} failed (${code}): ${err}`))));
  });
}

const f = await makeProject({ remote: false });
try {
  const file = await writePipeline(f, `version: 1\nname: logs\nproject: { path: project, push: never }\nsteps:\n  - id: loud\n    image: ${IMAGE}\n    timeout: 30m\n    run: ${JSON.stringify(PRINT)}\n`);
  let peak = 0;
  const runner = async () => {
    let watch: ReturnType<typeof watchPeakMemory> | undefined;
    const ms = await timed(() => run(process.execPath, [CLI, 'exec', file, '--home', f.home], (pid) => (watch = watchPeakMemory(pid))));
    watch?.stop();
    peak = Math.max(peak, watch?.peak() ?? 0);
    return ms;
  };
  const docker = () => timed(() => run('docker', ['run', '--rm', '--network', 'none', '--memory', '2g', '--cpus', '1.5', '--pids-limit', '512', IMAGE, 'sh', '-c', PRINT]));
  await docker();
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    a.push(await runner());
    b.push(await docker());
  }
  report({
    bench: 'logs',
    against: 'docker run into /dev/null',
    aim: '>= 0.7',
    ratio: median(b) / median(a),
    detail: `${MIB} MiB of output: runner ${median(a).toFixed(0)} ms, docker run ${median(b).toFixed(0)} ms (medians of ${ROUNDS}); the runner's peak memory ${(peak / 1024 ** 2).toFixed(0)} MB (aim: under 200)`,
  });
  if (peak >= 200 * 1024 ** 2) console.log(`logs: the runner's peak memory ${(peak / 1024 ** 2).toFixed(0)} MB is over the 200 MB aimed at`);
} finally {
  await f.cleanup();
}
