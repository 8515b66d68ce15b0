/**
 * bench/runs-ls: `runner runs ls` over 1,000 recorded runs (aim: well under a
 * second), with `node -e 0` timed in the same run as the floor of any command.
 *
 *   node dist/bench/runs-ls.js [RUNS]
 */
import { execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { CLI } from '../test/fixtures/project.js';

const RUNS = Number(process.argv[2] ?? 1000);

function record(i: number) {
  const t = new Date(Date.UTC(2026, 0, 1) + i * 60_000);
  const id = `${t.toISOString().slice(0, 10).replaceAll('-', '')}-${t.toISOString().slice(11, 19).replaceAll(':', '')}-b${String(i).padStart(5, '0')}`;
  return {
    runId: id, pipeline: `p${i % 7}`, pipelineFile: '/x.yaml', project: '/nonexistent', workspace: 'git_worktree', taskId: null,
    worktree: null, branch: `run/${id}`, baseSha: 'a'.repeat(40), headSha: 'b'.repeat(40), status: i % 5 ? 'succeeded' : 'failed',
    startedAt: t.toISOString(), finishedAt: t.toISOString(), durationMs: 12_345, pushed: false, push: null, keptWorkspace: false, pid: 1,
    current: null, recovery: null, delivered: null, deliveryRules: { verifySteps: [], paths: null }, hooks: [],
    steps: [1, 2, 3].map((n) => ({ id: `s${n}`, status: 'completed', exitCode: 0, oomKilled: false, timedOut: false, durationMs: 1000, commit: 'c'.repeat(40), outputs: {}, limits: [] })),
    error: null,
  };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

function time(args: string[]): number {
  const t0 = performance.now();
  execFileSync(process.execPath, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  return performance.now() - t0;
}

const home = await mkdtemp(path.join(os.tmpdir(), 'runner-bench-home-'));
try {
  for (let i = 0; i < RUNS; i++) {
    const r = record(i);
    await mkdir(path.join(home, 'runs', r.runId), { recursive: true });
    await writeFile(path.join(home, 'runs', r.runId, 'run.json'), JSON.stringify(r, null, 2));
  }
  const ls: number[] = [];
  const bare: number[] = [];
  for (let i = 0; i < 7; i++) {
    ls.push(time([CLI, 'runs', 'ls', '--home', home]));
    bare.push(time(['-e', '0']));
  }
  console.log(`runner runs ls over ${RUNS} runs: median ${median(ls).toFixed(0)} ms (node -e 0: ${median(bare).toFixed(0)} ms; ratio ${(median(ls) / median(bare)).toFixed(1)})`);
} finally {
  await rm(home, { recursive: true, force: true });
}
