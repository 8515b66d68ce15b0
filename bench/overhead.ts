/**
 * bench/overhead: the runner's cost over doing the same by hand.
 *
 * A five-step pipeline of trivial steps through `runner exec`, against a
 * hand-written shell script doing the same with plain `git worktree add`,
 * `docker run` and `git commit`, alternated in the same run on the same
 * machine. Prints the ratio of their median wall times (aim: <= 1.10), and
 * the ratio of `runner --help` to `node -e 0` (aim: < 1.5).
 *
 *   make bench            (or: node dist/bench/overhead.js [ROUNDS])
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLI, IMAGE, makeProject, writePipeline } from '../test/fixtures/project.js';
import { baselineScript, trivialPipeline } from './baseline.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 7);
const STEPS = 5;

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): void {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
}

async function main(): Promise<void> {
  const f = await makeProject({ remote: false });
  try {
    const file = await writePipeline(f, trivialPipeline(STEPS, IMAGE));
    const script = path.join(f.root, 'baseline.sh');
    await writeFile(script, baselineScript(STEPS), { mode: 0o755 });

    const runner: number[] = [];
    const baseline: number[] = [];
    // one warm-up of each, not counted
    run(process.execPath, [CLI, 'exec', file, '--home', f.home]);
    run('sh', [script, f.project, path.join(f.root, 'wt-warm'), 'bench/warm', IMAGE]);
    for (let i = 0; i < ROUNDS; i++) {
      runner.push(time(() => run(process.execPath, [CLI, 'exec', file, '--home', f.home])));
      baseline.push(time(() => run('sh', [script, f.project, path.join(f.root, `wt-${i}`), `bench/${i}`, IMAGE])));
    }

    const help: number[] = [];
    const bare: number[] = [];
    for (let i = 0; i < 21; i++) {
      help.push(time(() => execFileSync(process.execPath, [CLI, '--help'])));
      bare.push(time(() => execFileSync(process.execPath, ['-e', '0'])));
    }

    const r = median(runner);
    const b = median(baseline);
    report({
      bench: 'overhead',
      against: 'the hand-written script',
      aim: '<= 1.10',
      ratio: r / b,
      detail: `five trivial steps: runner ${r.toFixed(0)} ms, script ${b.toFixed(0)} ms (medians of ${ROUNDS}; runner ${runner.map((x) => x.toFixed(0)).join(' ')}, script ${baseline.map((x) => x.toFixed(0)).join(' ')})`,
    });
    report({
      bench: 'cli start',
      against: 'node -e 0',
      aim: '<= 1.5',
      ratio: median(help) / median(bare),
      detail: `runner --help ${median(help).toFixed(0)} ms, node -e 0 ${median(bare).toFixed(0)} ms (medians of 21)`,
    });
  } finally {
    await f.cleanup();
  }
}

await main();
