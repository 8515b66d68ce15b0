/**
 * bench/concurrency: sixteen `runner exec` processes started at once, each a
 * run of three trivial steps on the same repository, against sixteen copies
 * of the hand-written script doing the same (bench/baseline.ts) started at
 * once, alternated in one run: the ratio of the medians of the wall time
 * until all have ended.
 *
 *   make bench     (or: node dist/bench/concurrency.js [ROUNDS] [RUNS])
 */
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLI, IMAGE, makeProject, writePipeline } from '../test/fixtures/project.js';
import { baselineScript, trivialPipeline } from './baseline.js';
import { median, report, timed } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const RUNS = Number(process.argv[3] ?? 16);
const STEPS = 3;

function run(cmd: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, CI: 'true' } });
    let err = '';
    c.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-2000)));
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${cmd} ${args.join(' ')} failed (${code}): ${err}`))));
  });
}

const f = await makeProject({ remote: false });
try {
  const file = await writePipeline(f, trivialPipeline(STEPS, IMAGE));
  const script = path.join(f.root, 'baseline.sh');
  await writeFile(script, baselineScript(STEPS), { mode: 0o755 });
  let n = 0;
  // every one ends before the next batch (or the cleanup) starts; the first failure is then said
  const all = async (ps: Array<Promise<void>>) => {
    const failed = (await Promise.allSettled(ps)).find((r) => r.status === 'rejected');
    if (failed) throw (failed as PromiseRejectedResult).reason;
  };
  const runners = () => timed(() => all(Array.from({ length: RUNS }, () => run(process.execPath, [CLI, 'exec', file, '--home', f.home]))));
  const scripts = () =>
    timed(() =>
      all(
        Array.from({ length: RUNS }, () => {
          const i = n++;
          return run('sh', [script, f.project, path.join(f.root, `wt-${i}`), `bench/${i}`, IMAGE]);
        }),
      ),
    );
  await runners();
  await scripts();
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    a.push(await runners());
    b.push(await scripts());
  }
  report({
    bench: 'concurrency',
    against: `${RUNS} hand-written scripts at once`,
    aim: '<= 1.10',
    ratio: median(a) / median(b),
    detail: `${RUNS} runs x ${STEPS} steps at once: runner ${median(a).toFixed(0)} ms, scripts ${median(b).toFixed(0)} ms (medians of ${ROUNDS}; runner ${a.map((x) => x.toFixed(0)).join(' ')}, scripts ${b.map((x) => x.toFixed(0)).join(' ')})`,
  });
} finally {
  await f.cleanup();
}
