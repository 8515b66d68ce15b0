import assert from 'node:assert/strict';
import { test } from 'node:test';
import { entryFires, notifyBody, notifyStatus, renderBody } from '../../src/notify/body.js';
import { newRecord, type RunRecord } from '../../src/run/record.js';
import type { StepResult } from '../../src/run/step-result.js';

function step(id: string, status: StepResult['status'], costUsd: number | null = null): StepResult {
  return {
    id, status, exitCode: status === 'completed' ? 0 : 1, oomKilled: false, timedOut: status === 'timed_out', durationMs: 1, commit: null, outputs: {}, limits: [],
    ...(costUsd !== null ? { usage: { inputTokens: 10, outputTokens: 5, costUsd } as NonNullable<StepResult['usage']> } : {}),
  };
}

function record(status: RunRecord['status'], steps: StepResult[] = []): RunRecord {
  return newRecord({ runId: '20300102-030405-abcd', pipeline: 'nightly', pipelineFile: '/p/nightly.yaml', project: '/p/app', workspace: 'git_worktree', status, startedAt: '2030-01-02T03:04:05Z', pid: 1, branch: 'run/20300102-030405-abcd', steps });
}

test("a run's status as on: names it: a failed run stopped by its budget or a step's timeout says so", () => {
  assert.equal(notifyStatus(record('succeeded')), 'succeeded');
  assert.equal(notifyStatus(record('canceled')), 'canceled');
  assert.equal(notifyStatus(record('error')), 'error');
  assert.equal(notifyStatus(record('interrupted')), 'interrupted');
  assert.equal(notifyStatus(record('failed', [step('a', 'completed'), step('b', 'failed')])), 'failed');
  assert.equal(notifyStatus(record('failed', [step('a', 'budget_exhausted')])), 'budget_exhausted');
  assert.equal(notifyStatus(record('failed', [step('a', 'timed_out')])), 'timed_out');
  for (const s of ['running', 'queued', 'not_started'] as const) assert.equal(notifyStatus(record(s)), undefined);
  // the statuses approval gates add: a rejected run has ended; one waiting at a gate has not (its gate tells of it, with the gate's step)
  assert.equal(notifyStatus(record('rejected')), 'rejected');
  assert.equal(notifyStatus(record('awaiting_approval')), undefined);
});

test('an entry fires on the statuses its on: names; failed covers budget_exhausted and timed_out', () => {
  assert.equal(entryFires({ on: ['succeeded'] }, 'succeeded'), true);
  assert.equal(entryFires({ on: ['succeeded'] }, 'failed'), false);
  assert.equal(entryFires({ on: ['failed'] }, 'budget_exhausted'), true);
  assert.equal(entryFires({ on: ['failed'] }, 'timed_out'), true);
  assert.equal(entryFires({ on: ['budget_exhausted'] }, 'failed'), false);
  assert.equal(entryFires({ on: ['failed'] }, 'canceled'), false);
});

test('the JSON body names the run, its pipeline, project, status, branch, cost, page and time; slack gets one line of text', () => {
  const r = record('failed', [step('plan', 'completed', 0.25), step('implement', 'budget_exhausted', 1.5)]);
  r.error = { code: 'step_failed', message: 'step implement: budget exhausted\nmore' };
  const body = notifyBody(r, 'budget_exhausted', new Date('2030-01-02T04:00:00Z'));
  assert.deepEqual(JSON.parse(renderBody(body, 'json')), {
    runId: '20300102-030405-abcd', pipeline: 'nightly', project: '/p/app', status: 'budget_exhausted', runStatus: 'failed',
    branch: 'run/20300102-030405-abcd', costUsd: 1.75, link: '/runs/20300102-030405-abcd', at: '2030-01-02T04:00:00.000Z',
    error: { code: 'step_failed', message: 'step implement: budget exhausted\nmore' },
    gate: null,
  });
  assert.deepEqual(JSON.parse(renderBody(body, 'slack')), {
    text: 'runner: nightly run 20300102-030405-abcd budget exhausted on run/20300102-030405-abcd, $1.75 (/runs/20300102-030405-abcd): step implement: budget exhausted',
  });
  assert.equal(notifyBody(record('succeeded'), 'succeeded', new Date()).costUsd, null);
});

const GATE = { step: 'approve-plan', prompt: "Read PLAN.md on the run's branch; approve to implement it.\nThen say why.", deadline: new Date('2030-01-04T04:00:00Z') };

test("a gate's body says which step waits, its prompt, its deadline and how to approve or reject through the CLI and the API", () => {
  const r = record('awaiting_approval', [step('plan', 'completed', 0.25)]);
  const body = JSON.parse(renderBody(notifyBody(r, 'awaiting_approval', new Date('2030-01-02T04:00:00Z'), GATE), 'json')) as Record<string, unknown>;
  assert.equal(body.status, 'awaiting_approval');
  assert.equal(body.runStatus, 'awaiting_approval');
  assert.equal(body.costUsd, 0.25);
  assert.deepEqual(body.gate, {
    step: 'approve-plan',
    prompt: "Read PLAN.md on the run's branch; approve to implement it.\nThen say why.",
    deadline: '2030-01-04T04:00:00.000Z',
    approve: { command: 'runner approve 20300102-030405-abcd', api: 'POST /api/runs/20300102-030405-abcd/approve' },
    reject: { command: 'runner reject 20300102-030405-abcd', api: 'POST /api/runs/20300102-030405-abcd/reject' },
  });
  assert.deepEqual(JSON.parse(renderBody(notifyBody(r, 'awaiting_approval', new Date(), GATE), 'slack')), {
    text:
      "runner: nightly run 20300102-030405-abcd awaiting approval at approve-plan on run/20300102-030405-abcd, $0.25 (/runs/20300102-030405-abcd): Read PLAN.md on the run's branch; approve to implement it. " +
      'Approve: runner approve 20300102-030405-abcd (or POST /api/runs/20300102-030405-abcd/approve); reject: runner reject 20300102-030405-abcd; by 2030-01-04T04:00:00.000Z, else it ends rejected',
  });
});

test("a gate without a timeout has no deadline; the runner's own hint says how to approve; a rejected run names its gate and is not asked to decide again", () => {
  const r = record('awaiting_approval');
  const gate = notifyBody(r, 'awaiting_approval', new Date(), { step: 'ok', prompt: 'Look.', approveHint: 'runner approve 20300102-030405-abcd --home /srv/runner' }).gate!;
  assert.equal(gate.deadline, null);
  assert.equal(gate.approve.command, 'runner approve 20300102-030405-abcd --home /srv/runner');
  assert.equal(gate.approve.api, 'POST /api/runs/20300102-030405-abcd/approve');
  assert.equal(notifyBody(r, 'awaiting_approval', new Date(), { step: 'ok', prompt: 'Look.', deadline: 'in two days' }).gate!.deadline, 'in two days');
  const rejected = record('rejected');
  rejected.error = { code: 'rejected', message: 'rejected at approve-plan by ana: not this plan' };
  const text = (JSON.parse(renderBody(notifyBody(rejected, 'rejected', new Date(), GATE), 'slack')) as { text: string }).text;
  assert.equal(text, 'runner: nightly run 20300102-030405-abcd rejected at approve-plan on run/20300102-030405-abcd (/runs/20300102-030405-abcd): rejected at approve-plan by ana: not this plan');
});
