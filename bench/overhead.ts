/**
 * bench/overhead: the runner's cost over doing the same by hand.
 *
 * A five-step pipeline of trivial steps through `runner exec`, against a
 * hand-written shell script doing the same with plain `git worktree add`,
 * `docker run` and `git commit`, alternated in the same run on the same
 * machine. Prints the ratio of their median wall times (aim: <= 1.15), and
 * the ratio of `runner --help` to `node -e 0` (aim: < 1.5).
 *
 *   make bench            (or: node dist/bench/overhead.js [ROUNDS])
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLI, IMAGE, makeProject, writePipeline } from '../test/fixtures/project.js';

const ROUNDS = Number(process.argv[2] ?? 7);
const STEPS = 5;

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function run(cmd: string, args: string[], env?: NodeJS.ProcessEnv): void {
  const r = spawnSync(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
}

const BASELINE = `#!/bin/sh
# The same work by hand: a worktree on a new branch, five containers, five commits.
set -e
project=$1; wt=$2; branch=$3; image=$4
git -C "$project" worktree add -q -b "$branch" "$wt" HEAD
for i in 1 2 3 4 5; do
  docker run --rm --network none --memory 2g --cpus 1.5 --pids-limit 512 \\
    -v "$wt:/home/agent/run-workspace" -v "$project:/home/agent/project-workspace:ro" \\
    -w /home/agent/run-workspace "$image" sh -e -c "echo step $i > f$i.txt" >/dev/null
  git -C "$wt" add -A
  git -C "$wt" -c user.name=b -c user.email=b@localhost commit -q -m "step $i"
done
git -C "$project" worktree remove --force "$wt"
`;

async function main(): Promise<void> {
  const f = await makeProject({ remote: false });
  try {
    const steps = Array.from({ length: STEPS }, (_, i) => `  - id: s${i + 1}\n    run: echo step ${i + 1} > f${i + 1}.txt\n`).join('');
    const file = await writePipeline(
      f,
      `version: 1\nname: bench\nproject: { path: project, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n${steps}`,
    );
    const script = path.join(f.root, 'baseline.sh');
    await writeFile(script, BASELINE, { mode: 0o755 });

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
    console.log(`five trivial steps, ${ROUNDS} rounds alternated:`);
    console.log(`  runner exec      median ${r.toFixed(0)} ms   (${runner.map((x) => x.toFixed(0)).join(' ')})`);
    console.log(`  shell baseline   median ${b.toFixed(0)} ms   (${baseline.map((x) => x.toFixed(0)).join(' ')})`);
    console.log(`  ratio runner/baseline: ${(r / b).toFixed(2)} (aim <= 1.15)`);
    console.log(`runner --help vs node -e 0, 21 rounds:`);
    console.log(`  ratio: ${(median(help) / median(bare)).toFixed(2)} (aim < 1.5; ${median(help).toFixed(0)} ms vs ${median(bare).toFixed(0)} ms)`);
  } finally {
    await f.cleanup();
  }
}

await main();
