/**
 * Recovery's decisions (src/run/reconcile.ts, cleanup-recovery.ts), driven by
 * what the fake engine holds: a runner killed with -9 mid-step (its container
 * still running in the engine), one killed as its cleanup began, a live run
 * another process must not touch, and containers nobody owns. The runner that
 * dies is a real process (test/fixtures/crash-run.ts); git is real.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { Git } from '../../src/git/git.js';
import { LABELS } from '../../src/container/runtime.js';
import { readRun } from '../../src/run/records.js';
import { interruptedStep, reconcile } from '../../src/run/reconcile.js';
import { agentBefore } from '../../src/run/run-flow.js';
import { RunnerHome } from '../../src/workspace/home.js';
import { coreProjects, FakeEngine, pipeline, runCommits, runOn, steppingClock } from '../fixtures/core-run.js';
import type { CrashPlan } from '../fixtures/crash-run.js';
import { plainSpec } from '../fixtures/fake-engine.js';
import { git, otherWorktrees, type Fixture } from '../fixtures/project.js';
import { readdir } from 'node:fs/promises';

const project = coreProjects();
const CRASH = path.join(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/crash-run.js');

/** Runs the pipeline in a runner process that dies where `at` says; resolves once it is dead. */
async function crash(f: Fixture, file: string, at: CrashPlan['at'], ready: string[] = ['work']): Promise<{ stateFile: string; runId: string }> {
  const stateFile = path.join(f.root, 'engine.json');
  const plan: CrashPlan = { file, home: f.home, stateFile, at };
  const child = spawn(process.execPath, [CRASH, JSON.stringify(plan)], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stderr.on('data', (b) => (err += b));
  const exited = new Promise<NodeJS.Signals | null>((r) => child.on('close', (_code, signal) => r(signal)));
  child.stdout.on('data', (b) => {
    out += b;
    if (at === 'step' && ready.every((s) => out.includes(`READY ${s}\n`))) child.kill('SIGKILL');
  });
  const signal = await exited;
  assert.equal(signal, 'SIGKILL', `the runner was to die: ${out}\n${err}`);
  const [runId] = await readdir(path.join(f.home, 'runs'));
  return { stateFile, runId: runId! };
}

const deps = (engine: FakeEngine | undefined, said: string[] = []) => ({ runtime: engine, makeGit: (who: object) => new Git(who), clock: steppingClock(), say: (m: string) => void said.push(m) });

test("a runner killed mid-step: recovery marks the run interrupted, commits the step's leftovers, removes its container still running and its worktree", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: work\n    run: work\n  - id: never\n    run: never');
  const { stateFile, runId } = await crash(f, file, 'step');
  const home = new RunnerHome(f.home);
  const before = await readRun(home.runs, runId);
  assert.equal(before.status, 'running');
  assert.deepEqual(before.running?.map((r) => r.id), ['work']);

  // the engine outlived the runner: the step's container still runs there
  const engine = new FakeEngine({ stateFile });
  assert.deepEqual(engine.running().map((c) => c.step), ['work']);
  const said: string[] = [];
  const report = await reconcile(deps(engine, said), home);

  assert.deepEqual(report.interrupted, [runId]);
  const rec = await readRun(home.runs, runId);
  assert.equal(rec.status, 'interrupted');
  assert.equal(rec.error?.code, 'interrupted');
  const work = rec.steps.find((s) => s.id === 'work')!;
  assert.equal(work.status, 'interrupted');
  const [c] = runCommits(f, rec);
  assert.equal(c!.subject, 'step/work (runner): interrupted');
  assert.deepEqual(c!.files, ['work.txt']);
  assert.equal(work.commit, c!.sha);
  assert.equal(rec.headSha, c!.sha);
  // its container was stopped and removed; its worktree is gone
  assert.deepEqual(engine.live(), []);
  assert.deepEqual(engine.entries('remove').map((e) => e.step), ['work']);
  assert.equal(existsSync(rec.worktree!), false);
  assert.deepEqual(otherWorktrees(f), []);
  assert.ok(said.some((m) => m.includes(`run ${runId} was interrupted`)), said.join('\n'));

  // recovery is done once: a second pass finds nothing to do
  const again = await reconcile(deps(new FakeEngine({ stateFile })), home);
  assert.deepEqual(again.interrupted, []);
  assert.equal((await readRun(home.runs, runId)).steps.length, rec.steps.length);
});

test("a runner killed while lanes ran: each lane's leftovers are committed on its branch, which is kept, and its worktree goes", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: left\n    run: left\n    needs: []\n  - id: right\n    run: right\n    needs: []', 'max_parallel: 2');
  const { stateFile, runId } = await crash(f, file, 'step', ['left', 'right']);
  const engine = new FakeEngine({ stateFile });
  assert.equal(engine.running().length, 2);
  const home = new RunnerHome(f.home);
  const report = await reconcile(deps(engine), home);
  assert.deepEqual(report.interrupted, [runId]);
  const rec = await readRun(home.runs, runId);
  assert.deepEqual(rec.steps.map((s) => [s.id, s.status]).sort(), [['left', 'interrupted'], ['right', 'interrupted']]);
  assert.deepEqual([...rec.flow!.keptBranches].sort(), [`run/${runId}+left`, `run/${runId}+right`]);
  for (const side of ['left', 'right']) {
    assert.equal(git(f.project, 'show', `run/${runId}+${side}:${side}.txt`), `left by ${side}`);
    assert.match(git(f.project, 'log', '-1', '--format=%s', `run/${runId}+${side}`), new RegExp(`^step/${side} \\(runner\\): interrupted`));
  }
  assert.deepEqual(engine.live(), []);
  assert.deepEqual(otherWorktrees(f), []);
});

test('a runner killed as its cleanup began: recovery finishes the cleanup, keeps the outcome, commits nothing', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: work\n    run: work');
  const { stateFile, runId } = await crash(f, file, 'cleanup');
  const home = new RunnerHome(f.home);
  const before = await readRun(home.runs, runId);
  assert.equal(before.status, 'succeeded');
  assert.equal(before.cleanup?.workspace, 'remove');
  assert.equal(existsSync(before.worktree!), true);
  const head = git(f.project, 'rev-parse', before.branch!);

  const report = await reconcile(deps(new FakeEngine({ stateFile })), home);
  assert.deepEqual(report.cleanedUp, [runId]);
  assert.deepEqual(report.interrupted, []);
  const rec = await readRun(home.runs, runId);
  assert.equal(rec.status, 'succeeded');
  assert.equal(rec.cleanup, null);
  assert.equal(existsSync(rec.worktree!), false);
  assert.deepEqual(otherWorktrees(f), []);
  // nothing committed after the fact
  assert.equal(git(f.project, 'rev-parse', rec.branch!), head);
  assert.deepEqual(runCommits(f, rec).map((c) => c.subject), ['step/work (runner/base:latest): completed']);
});

test("recovery never touches a live run, nor its container; it removes containers whose run is gone", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: work\n    run: work');
  const engine = new FakeEngine();
  // a container left by a run of this home that no process owns
  const orphan = await engine.create(plainSpec({ name: 'runner-gone', image: 'runner/base:latest', labels: { [LABELS.home]: f.home, [LABELS.runId]: '20290101-000000-gone00' } }));
  await orphan.start();
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let report: Awaited<ReturnType<typeof reconcile>> | undefined;
  engine.step('work', async (p) => {
    await p.write('work.txt', 'w\n');
    // another process's recovery runs now, while this run lives
    report = await reconcile(deps(engine), new RunnerHome(f.home));
    release();
    await released;
  });
  const { record } = await runOn(engine, f, file);
  assert.ok(report);
  assert.deepEqual(report.interrupted, []);
  assert.equal(report.containersRemoved, 1);
  assert.equal(report.runs.find((r) => r.runId === record.runId)?.status, 'running');
  // the orphan went, the live step's container ran on to its own end
  assert.deepEqual(engine.entries('remove').map((e) => e.name)[0], 'runner-gone');
  assert.deepEqual(engine.entries('kill', 'work'), []);
  assert.equal(record.status, 'succeeded');
  assert.equal(record.steps[0]!.status, 'completed');
});

test('recovery without an engine (none answers) still recovers the run on disk', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: work\n    run: work');
  const { runId } = await crash(f, file, 'step');
  const home = new RunnerHome(f.home);
  const report = await reconcile(deps(new FakeEngine({ down: true })), home);
  assert.deepEqual(report.interrupted, [runId]);
  const rec = await readRun(home.runs, runId);
  assert.equal(rec.status, 'interrupted');
  assert.match(rec.error?.message ?? '', /its container could not be removed: docker is not reachable/);
  assert.equal(runCommits(f, rec)[0]!.subject, 'step/work (runner): interrupted');
});

test("an agent step a dead runner left running is recorded as an agent's: its leftovers are on the run's branch, so a resume's steps come after an agent's", () => {
  const now = '2026-11-27T12:00:10.000Z';
  const r = interruptedStep({ id: 'implement', name: 'implement', startedAt: '2026-11-27T12:00:00.000Z', isolation: 'runc', agent: 'coder' }, now);
  assert.equal(r.status, 'interrupted');
  assert.equal(r.agent, 'coder');
  assert.equal(r.durationMs, 10_000);
  assert.deepEqual(agentBefore([{ id: 'prep', status: 'failed' } as never, r]), { agentBefore: 'implement' });
  assert.equal(interruptedStep({ id: 'work', name: 'work', startedAt: now }, now).agent, undefined, 'a step that is not an agent stays so');
  assert.deepEqual(interruptedStep({ id: 'l', name: 'l', startedAt: now, lane: { worktree: '/w', branch: 'run/x+l', recovery: { gitDir: '/g', links: [], dirId: 'd' } as never } }, now).lane, { branch: 'run/x+l', merge: 'not_merged' });
});

