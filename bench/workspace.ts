/**
 * bench/workspace: how long a run takes to reach its first step on a big
 * repository (about 13,000 files and 100 MB, with history), from `runner
 * exec` to the first step's start (its step_started event), against `git
 * worktree add` of the same commit, alternated in one run. The runner's
 * worktree comes from its pool (filled by a warm-up run).
 *
 *   make bench     (or: node dist/bench/workspace.js [ROUNDS] [FILES])
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CLI, IMAGE, makeProject, writePipeline } from '../test/fixtures/project.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const FILES = Number(process.argv[3] ?? 13_000);
const BYTES = 100 * 1024 ** 2;

const git = (dir: string, ...args: string[]) => execFileSync('git', ['-C', dir, '-c', 'user.name=b', '-c', 'user.email=b@l', ...args], { encoding: 'utf8', maxBuffer: 1 << 26 });

/** Files of random bytes (incompressible: git stores every byte), about BYTES in all, in three commits. */
async function generate(project: string): Promise<void> {
  const mean = BYTES / FILES;
  const fileAt = (i: number) => path.join(project, `pkg${i % 130}`, `mod${i % 9}`, `f${i}.dat`);
  for (let i = 0; i < FILES; i++) {
    await mkdir(path.dirname(fileAt(i)), { recursive: true });
    await writeFile(fileAt(i), randomBytes(Math.round(mean * (0.25 + 1.5 * ((i * 7919) % 1000) / 1000))));
  }
  git(project, 'add', '-A');
  git(project, 'commit', '-qm', 'a big tree');
  for (let i = 0; i < FILES; i += 40) await writeFile(fileAt(i), randomBytes(Math.round(mean)));
  git(project, 'commit', '-qam', 'some files changed');
  for (let i = 0; i < FILES; i += 97) await writeFile(fileAt(i), randomBytes(Math.round(mean)));
  git(project, 'commit', '-qam', 'more files changed');
}

/** Runs the pipeline; its run id. */
function exec(file: string, home: string): string {
  const r = spawnSync(process.execPath, [CLI, 'exec', file, '--home', home, '--json'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, CI: 'true' } });
  if (r.status !== 0) throw new Error(`runner exec failed (${r.status}): ${r.stderr}`);
  return (JSON.parse(r.stdout) as { runId: string }).runId;
}

async function firstStepAt(home: string, runId: string): Promise<number> {
  const events = (await readFile(path.join(home, 'runs', runId, 'events.jsonl'), 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { message: string; timestamp: string });
  const started = events.find((e) => e.message === 'step_started');
  if (!started) throw new Error(`run ${runId} has no step_started event`);
  return Date.parse(started.timestamp);
}

const f = await makeProject({ remote: false });
try {
  console.log(`workspace: generating ${FILES} files, ${BYTES / 1024 ** 2} MB, 3 commits…`);
  await generate(f.project);
  const file = await writePipeline(f, `version: 1\nname: bench\nproject: { path: project, push: never }\nsteps:\n  - id: one\n    image: ${IMAGE}\n    run: "true"\n`);
  const toFirstStep = async () => {
    const t0 = Date.now();
    const runId = exec(file, f.home);
    return (await firstStepAt(f.home, runId)) - t0;
  };
  const add = (i: number) => {
    const wt = path.join(f.root, `plain-${i}`);
    const t0 = performance.now();
    git(f.project, 'worktree', 'add', '-q', '--detach', wt, 'HEAD');
    const ms = performance.now() - t0;
    git(f.project, 'worktree', 'remove', '--force', wt);
    return ms;
  };
  // the warm-up run fills the pool; the plain worktree warms the page cache alike
  await toFirstStep();
  add(-1);
  const runner: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    runner.push(await toFirstStep());
    plain.push(add(i));
  }
  const pooled = (await readdir(path.join(f.home, 'pool')).catch(() => [])).length > 0;
  report({
    bench: 'workspace',
    against: 'git worktree add of the same commit',
    aim: '<= 0.05',
    ratio: median(runner) / median(plain),
    detail: `${FILES} files, ${BYTES / 1024 ** 2} MB: runner exec to the first step ${median(runner).toFixed(0)} ms, git worktree add ${median(plain).toFixed(0)} ms (medians of ${ROUNDS}; runner ${runner.map((x) => x.toFixed(0)).join(' ')}, git ${plain.map((x) => x.toFixed(0)).join(' ')})${pooled ? '' : ' [the pool was empty: RUNNER_WORKTREE_POOL=0?]'}`,
  });
} finally {
  await f.cleanup();
}
