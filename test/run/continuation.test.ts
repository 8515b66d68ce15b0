import assert from 'node:assert/strict';
import { test } from 'node:test';
import { continuedRecord, forkPlan, resumePlan, workBefore, type Continuation } from '../../src/run/continuation.js';
import { agentBefore } from '../../src/run/run-flow.js';
import { newRecord, type RunRecord } from '../../src/run/record.js';
import type { StepResult } from '../../src/run/step-result.js';

const BASE = 'b'.repeat(40);
const sha = (c: string) => c.repeat(40);

function step(id: string, status: StepResult['status'], extra: Partial<StepResult> = {}): StepResult {
  return { id, status, exitCode: status === 'completed' ? 0 : status === 'skipped' ? null : 1, oomKilled: false, timedOut: false, durationMs: 10, commit: null, outputs: {}, limits: [], ...extra };
}

function run(status: RunRecord['status'], steps: StepResult[], extra: Partial<RunRecord> = {}): RunRecord {
  return newRecord({
    runId: 'r1',
    pipeline: 'p',
    pipelineFile: '/p.yaml',
    project: '/proj',
    workspace: 'git_worktree',
    status,
    startedAt: '2025-01-01T00:00:00.000Z',
    finishedAt: '2025-01-01T00:01:00.000Z',
    pid: 1,
    branch: 'run/r1',
    baseSha: BASE,
    steps,
    ...extra,
  });
}

const failedVerify = () =>
  run('failed', [
    step('plan', 'completed', { commit: sha('1'), outputs: { plan: 'PLAN.md' } }),
    step('implement', 'completed', { commit: sha('2') }),
    step('verify', 'failed', { commit: sha('3') }),
    step('after', 'skipped'),
  ]);

test('resume carries every completed step and goes on from the first that did not complete', () => {
  const { carry, from } = resumePlan(failedVerify());
  assert.deepEqual([...carry.keys()], ['plan', 'implement']);
  assert.deepEqual(carry.get('plan')!.outputs, { plan: 'PLAN.md' });
  assert.equal(from, 'verify');
});

test('resume: a step completed on a lane that was not merged is not carried', () => {
  const rec = run('failed', [
    step('a', 'completed', { lane: { branch: 'run/r1-a', merge: 'merged', commit: sha('4') } }),
    step('b', 'completed', { lane: { branch: 'run/r1-b', merge: 'conflict', commit: sha('5') } }),
    step('c', 'completed', { lane: { branch: 'run/r1-c', merge: 'unchanged' } }),
    step('d', 'completed', { lane: { branch: 'run/r1-d', merge: 'not_merged', commit: sha('6') } }),
  ]);
  const { carry, from } = resumePlan(rec);
  assert.deepEqual([...carry.keys()].sort(), ['a', 'c']);
  assert.equal(from, 'b');
});

test('resume: a step that completed in an earlier resume (verify~2) is carried as verify the next time', () => {
  const rec = run('failed', [
    step('plan', 'completed', { commit: sha('1') }),
    step('verify', 'failed', { commit: sha('3') }),
    step('verify', 'completed', { name: 'verify~2', commit: sha('4'), runAttempt: 2, outputs: { ok: 'yes' } }),
    step('ship', 'failed', { runAttempt: 2 }),
  ], { attempts: [{ n: 1, startedAt: 't0', how: 'start' }, { n: 2, startedAt: 't1', how: 'resume', from: 'verify' }] });
  const { carry, from } = resumePlan(rec);
  assert.deepEqual([...carry.keys()].sort(), ['plan', 'verify']);
  assert.deepEqual(carry.get('verify')!.outputs, { ok: 'yes' });
  assert.equal(from, 'ship');
});

test('resume: refusals say why and what to do instead', () => {
  const refused = (rec: RunRecord, re: RegExp) => assert.throws(() => resumePlan(rec), (e: Error & { code?: string }) => e.code === 'not_resumable' && re.test(e.message));
  refused(run('succeeded', [step('a', 'completed')]), /cannot be resumed: it succeeded: there is nothing left to run \(fork it to run a step again: runner fork RUN --from STEP\)/);
  refused(run('running', []), /cannot be resumed: it has not ended/);
  refused(run('queued', []), /it has not ended/);
  refused(run('rejected', []), /it was rejected at a gate \(fork it to try again/);
  refused(run('not_started', []), /its status is not_started/);
  refused(run('failed', [], { workspace: 'task_worktree' }), /worked in a task's worktree, which later runs of the task reuse: start the task again instead/);
  refused(run('failed', [], { branch: null }), /has no branch \(it stopped before its worktree was made\): start it again instead/);
  for (const s of ['failed', 'interrupted', 'canceled', 'error', 'awaiting_approval'] as const) assert.doesNotThrow(() => resumePlan(run(s, [])));
});

test('fork from a step: the steps before it carried, its branch from the last commit before it', () => {
  const { carry, startAt } = forkPlan(failedVerify(), 'implement');
  assert.deepEqual([...carry.keys()], ['plan']);
  assert.equal(startAt, sha('1'));
  assert.equal(forkPlan(failedVerify(), 'plan').startAt, BASE, 'from the first step: the run base');
  assert.equal(forkPlan(failedVerify(), 'plan').carry.size, 0);
});

test('fork: a failed step before it that committed counts for the start; a lane not merged does not', () => {
  const rec = run('failed', [
    step('a', 'completed', { commit: sha('1') }),
    step('flaky', 'failed', { commit: sha('2') }),
    step('l1', 'completed', { lane: { branch: 'run/r1-l1', merge: 'merged', commit: sha('3') } }),
    step('l2', 'completed', { lane: { branch: 'run/r1-l2', merge: 'not_merged', commit: sha('4') } }),
    step('z', 'failed'),
  ]);
  const { carry, startAt } = forkPlan(rec, 'z');
  assert.deepEqual([...carry.keys()], ['a', 'l1']);
  assert.equal(startAt, sha('3'));
  assert.equal(forkPlan(rec, 'l1').startAt, sha('2'), 'the tolerated failure\'s commit');
});

test("fork: the prior run's steps before its step count for the caches' trust, a failed agent step's too (its commit is on the branch, it is not carried)", () => {
  const rec = run('failed', [step('implement', 'failed', { commit: sha('1'), agent: 'coder' }), step('check', 'completed', { commit: sha('2') })]);
  const { carry, startAt } = forkPlan(rec, 'check');
  assert.equal(carry.size, 0, 'the failed agent step is not carried');
  assert.equal(startAt, sha('1'), "the fork's branch begins with its commit");
  const before = workBefore({ kind: 'fork', prior: rec, from: 'check' });
  assert.deepEqual(before.map((s) => s.id), ['implement']);
  assert.deepEqual(agentBefore(before), { agentBefore: 'implement' });
  assert.deepEqual(workBefore({ kind: 'fork', prior: rec, from: 'implement' }), [], 'from the agent step itself: none of its work');
  assert.deepEqual(workBefore({ kind: 'resume', prior: rec, from: 'check' }), [], "a resume keeps its steps in its own record");
});

test('fork: an unknown step, a skipped step, and runs that cannot be forked are refused with their words', () => {
  assert.throws(() => forkPlan(failedVerify(), 'nope'), /run r1 has no step "nope" that ran; its steps: plan, implement, verify$/);
  assert.throws(() => forkPlan(failedVerify(), '../../etc'), /has no step "\.\.\/\.\.\/etc" that ran/);
  assert.throws(() => forkPlan(failedVerify(), 'after'), /step after of run r1 never ran: resume the run instead \(runner resume r1\)/);
  assert.throws(() => forkPlan(run('running', []), 'a'), /run r1 has not ended: fork it once it has/);
  assert.throws(() => forkPlan(run('failed', [], { workspace: 'persistent_directory', branch: null, baseSha: null }), 'a'), /persistent directory, which has no commits/);
  assert.throws(() => forkPlan(run('failed', [], { workspace: 'task_worktree' }), 'a'), /task's worktree: fork a run of its own pipeline instead/);
  assert.doesNotThrow(() => forkPlan(run('succeeded', [step('a', 'completed')]), 'a'), 'a succeeded run may be forked');
});

test('continuedRecord: a resume keeps its record and each attempt; skipped steps are to run again', () => {
  const prior = failedVerify();
  const fresh = run('running', [], { pid: 42, pipelineFile: '/new.yaml', startedAt: '2025-01-02T00:00:00.000Z', finishedAt: null });
  const { carry, from } = resumePlan(prior);
  const c: Continuation = { kind: 'resume', how: 'resume', prior, carry, from, by: { via: 'cli', user: 'ada' } };
  const rec = continuedRecord(c, fresh, new Date('2025-01-02T00:00:00.000Z'));
  assert.equal(rec.runId, 'r1');
  assert.equal(rec.status, 'running');
  assert.equal(rec.pid, 42);
  assert.equal(rec.pipelineFile, '/new.yaml');
  assert.equal(rec.finishedAt, null);
  assert.equal(rec.baseSha, BASE, 'the diff stays the whole change');
  assert.deepEqual(rec.steps.map((s) => `${s.id}:${s.status}`), ['plan:completed', 'implement:completed', 'verify:failed']);
  assert.deepEqual(rec.attempts, [
    { n: 1, startedAt: prior.startedAt, how: 'start', finishedAt: prior.finishedAt, status: 'failed' },
    { n: 2, startedAt: '2025-01-02T00:00:00.000Z', how: 'resume', from: 'verify', by: { via: 'cli', user: 'ada' } },
  ]);
  // a second resume adds a third attempt and closes the second
  const again = continuedRecord({ ...c, prior: { ...rec, status: 'failed', finishedAt: '2025-01-02T00:05:00.000Z' } }, fresh, new Date('2025-01-03T00:00:00.000Z'));
  assert.deepEqual(again.attempts!.map((a) => [a.n, a.how, a.status]), [[1, 'start', 'failed'], [2, 'resume', 'failed'], [3, 'resume', undefined]]);
  assert.equal(again.attempts![1]!.finishedAt, '2025-01-02T00:05:00.000Z');
});

test('continuedRecord: a fork is a new run that names the run and commit it came from', () => {
  const prior = failedVerify();
  const fresh = run('running', [], { runId: 'r2', branch: null, baseSha: null, finishedAt: null });
  const { carry, startAt } = forkPlan(prior, 'implement');
  const rec = continuedRecord({ kind: 'fork', how: 'fork', prior, carry, from: 'implement', startAt }, fresh, new Date('2025-01-02T00:00:00.000Z'));
  assert.equal(rec.runId, 'r2');
  assert.deepEqual(rec.forkOf, { runId: 'r1', step: 'implement', commit: sha('1') });
  assert.deepEqual(rec.steps, []);
  assert.deepEqual(rec.attempts, [{ n: 1, startedAt: '2025-01-02T00:00:00.000Z', how: 'start', from: 'implement' }]);
});
