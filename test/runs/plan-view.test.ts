/** A run's plan: every step of its pipeline file with where it stands, or the steps on record (and why) when the file is not the one it ran with. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { StepFile } from '../../src/pipeline/schema.js';
import { planOf, planStates, planSteps, recordSteps } from '../../src/runs/plan-view.js';
import type { StepResult } from '../../src/run/step-result.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

function ran(id: string, status: StepResult['status'], extra: Partial<StepResult> = {}): StepResult {
  return { id, status, exitCode: status === 'completed' ? 0 : 1, oomKilled: false, timedOut: false, durationMs: 1000, commit: null, outputs: {}, limits: [], ...extra };
}

const FILE = `version: 1
name: ship
defaults: { image: alpine:3 }
secrets: [ANTHROPIC_API_KEY]
agents:
  planner: { use: claude-code }
  coder: { use: claude-code }
steps:
  - id: plan
    agent: planner
    prompt: Write PLAN.md
  - id: implement
    agent: coder
    prompt: Implement PLAN.md
  - id: review
    outputs: [verdict]
    run: echo verdict=OK >> "$RUNNER_OUTPUT"
    route: { output: verdict, to: { CHANGES: implement, AGAIN: implement } }
  - id: lint
    needs: [review]
    for_each: \${{ steps.review.outputs.verdict }}
    run: echo "$RUNNER_ITEM"
  - id: verify
    verify: true
    needs: [review]
    run: npm test
`;

async function pipelineFile(text = FILE): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-plan-'));
  roots.push(dir);
  const file = path.join(dir, 'ship.yaml');
  await writeFile(file, text);
  const past = new Date(Date.now() - 60_000);
  await utimes(file, past, past);
  return file;
}

test('every step of the file is listed from the start: pending while the run goes on, with what kind it is and what it waits for', async () => {
  const file = await pipelineFile();
  const startedAt = new Date().toISOString();
  const starting = await planOf({ status: 'running', steps: [], current: null, running: [], pipelineFile: file, startedAt });
  assert.equal(starting.from, 'pipeline_file');
  assert.equal(starting.note, undefined);
  assert.deepEqual(
    starting.steps.map((s) => [s.id, s.kind, s.state]),
    [
      ['plan', 'agent', 'pending'],
      ['implement', 'agent', 'pending'],
      ['review', 'run', 'pending'],
      ['lint', 'run', 'pending'],
      ['verify', 'run', 'pending'],
    ],
    'a run before its first step shows the whole plan',
  );
  const [, implement, review, lint, verify] = starting.steps;
  assert.equal(implement!.agent, 'coder');
  assert.deepEqual(review!.route, { output: 'verdict', to: ['implement'] }, 'a route says where it may go, each step once');
  assert.deepEqual([lint!.forEach, lint!.needs], ['${{ steps.review.outputs.verdict }}', ['review']]);
  assert.equal(verify!.verify, true);

  // while implement runs, verify is listed, pending
  const mid = await planOf({
    status: 'running',
    steps: [ran('plan', 'completed')],
    current: { id: 'implement', startedAt },
    running: [{ id: 'implement', name: 'implement', startedAt }],
    pipelineFile: file,
    startedAt,
  });
  assert.deepEqual(
    mid.steps.map((s) => [s.id, s.state, s.runs]),
    [
      ['plan', 'completed', ['plan']],
      ['implement', 'running', ['implement']],
      ['review', 'pending', []],
      ['lint', 'pending', []],
      ['verify', 'pending', []],
    ],
  );
});

test('a run that ended: loops and for_each instances by their names, the steps it never reached not run', () => {
  const specs = planSteps([
    { id: 'implement', agent: 'coder', prompt: 'x' },
    { id: 'review', run: 'x', route: { output: 'v', to: { NO: 'implement' } } },
    { id: 'lint', run: 'x', for_each: '${{ inputs.files }}' },
    { id: 'verify', run: 'x' },
  ] as StepFile[]);
  const steps = [
    ran('implement', 'completed'),
    ran('review', 'completed'),
    ran('implement', 'completed', { name: 'implement#2', attempt: 2 }),
    ran('review', 'completed', { name: 'review#2', attempt: 2 }),
    ran('lint', 'completed', { name: 'lint[0]', item: { index: 0, value: 'a' } }),
    ran('lint', 'failed', { name: 'lint[1]', item: { index: 1, value: 'b' } }),
    ran('lint', 'completed', { name: 'lint[2]', item: { index: 2, value: 'c' } }),
  ];
  const plan = planStates(specs, { status: 'failed', steps, current: null });
  assert.deepEqual(
    plan.map((s) => [s.id, s.state, s.runs]),
    [
      ['implement', 'completed', ['implement', 'implement#2']],
      ['review', 'completed', ['review', 'review#2']],
      ['lint', 'failed', ['lint[0]', 'lint[1]', 'lint[2]'], ],
      ['verify', 'not_run', []],
    ],
    "a for_each step failed when one of its instances did (by its latest run); a step the run never reached is not_run",
  );
  const retried = planStates(specs, { status: 'succeeded', steps: [ran('implement', 'failed'), ran('implement', 'completed', { name: 'implement#2', attempt: 2 })], current: null });
  assert.equal(retried[0]!.state, 'completed', 'a step retried into success is completed');
});

test('an approval step is a gate: what it asks, waiting while the run awaits approval, then the decision', () => {
  const specs = planSteps([
    { id: 'plan', agent: 'planner', prompt: 'x' },
    { id: 'approve-plan', approval: { prompt: 'Read PLAN.md; approve to implement it.', timeout: '48h' } },
    { id: 'implement', agent: 'coder', prompt: 'y' },
  ] as StepFile[]);
  assert.deepEqual(specs[1], { id: 'approve-plan', kind: 'approval', approval: { prompt: 'Read PLAN.md; approve to implement it.', timeout: '48h' } });
  const since = '2026-11-27T10:00:00.000Z';
  const gate = { id: 'approve-plan', name: 'approve-plan', prompt: 'Read PLAN.md; approve to implement it.', since, deadline: '2026-11-29T10:00:00.000Z' };
  const waiting = planStates(specs, { status: 'awaiting_approval', steps: [ran('plan', 'completed')], current: null, gate });
  assert.deepEqual(waiting.map((s) => s.state), ['completed', 'awaiting_approval', 'pending']);
  const decision = { step: 'approve-plan', decision: 'approved' as const, by: { via: 'cli' as const, user: 'ana' }, at: '2026-11-27T11:00:00.000Z', comment: 'go' };
  const approvedNotYetGoing = planStates(specs, { status: 'awaiting_approval', steps: [ran('plan', 'completed')], current: null, gate, decisions: [decision] });
  assert.deepEqual(approvedNotYetGoing.map((s) => s.state), ['completed', 'approved', 'pending'], 'approved, before the run is continued');
  const going = planStates(specs, {
    status: 'running',
    steps: [ran('plan', 'completed'), ran('approve-plan', 'completed', { approval: decision })],
    current: { id: 'implement', startedAt: since },
    running: [{ id: 'implement', name: 'implement', startedAt: since }],
    gate: null,
    decisions: [decision],
  });
  assert.deepEqual(going.map((s) => s.state), ['completed', 'approved', 'running']);
  const rejected = planStates(specs, { status: 'rejected', steps: [ran('plan', 'completed'), ran('approve-plan', 'failed')], current: null, gate: null, decisions: [{ ...decision, decision: 'rejected' }] });
  assert.deepEqual(rejected.map((s) => s.state), ['completed', 'rejected', 'not_run']);
  // without the file, the record's gate is still a gate
  const fromRecord = recordSteps({ status: 'awaiting_approval', steps: [ran('plan', 'completed', { agent: 'planner' })], current: null, gate });
  assert.deepEqual(fromRecord, [
    { id: 'plan', kind: 'agent', agent: 'planner' },
    { id: 'approve-plan', kind: 'approval', approval: { prompt: gate.prompt } },
  ]);
});

test("the copy of the file the run keeps in its directory is its plan, whatever became of the file since", async () => {
  const file = await pipelineFile();
  const dir = path.dirname(file);
  await writeFile(path.join(dir, 'pipeline.yaml'), FILE);
  await rm(file);
  const plan = await planOf({ status: 'failed', steps: [ran('plan', 'completed'), ran('implement', 'failed')], current: null, pipelineFile: file, pipelineCopy: 'pipeline.yaml', startedAt: new Date().toISOString() }, dir);
  assert.equal(plan.from, 'pipeline_copy');
  assert.deepEqual(plan.steps.map((s) => [s.id, s.state]), [['plan', 'completed'], ['implement', 'failed'], ['review', 'not_run'], ['lint', 'not_run'], ['verify', 'not_run']]);
  const outside = await planOf({ status: 'failed', steps: [], current: null, pipelineFile: file, pipelineCopy: '../x.yaml', startedAt: new Date().toISOString() }, dir);
  assert.equal(outside.from, 'record', 'a copy is a file in the run directory, never a path out of it');
});

test('a file gone, changed since the run started, or without a step the run ran: the steps on record, and why', async () => {
  const startedAt = new Date().toISOString();
  const steps = [ran('plan', 'completed', { agent: 'planner' }), ran('implement', 'failed', { agent: 'coder' })];
  const gone = await planOf({ status: 'failed', steps, current: null, pipelineFile: '/nonexistent/ship.yaml', startedAt });
  assert.equal(gone.from, 'record');
  assert.match(gone.note ?? '', /^the pipeline file \/nonexistent\/ship\.yaml is gone: the steps listed are those on record/);
  assert.deepEqual(gone.steps.map((s) => [s.id, s.kind, s.state]), [['plan', 'agent', 'completed'], ['implement', 'agent', 'failed']]);

  const file = await pipelineFile();
  const changed = await planOf({ status: 'failed', steps, current: null, pipelineFile: file, startedAt: new Date(Date.now() - 120_000).toISOString() });
  assert.equal(changed.from, 'record');
  assert.match(changed.note ?? '', /changed after the run started \(modified \d{4}-/);

  const other = await pipelineFile(FILE.replace('id: implement', 'id: build').replace('to: { CHANGES: implement, AGAIN: implement }', 'to: { CHANGES: build }'));
  const renamed = await planOf({ status: 'failed', steps, current: null, pipelineFile: other, startedAt });
  assert.equal(renamed.from, 'record');
  assert.match(renamed.note ?? '', /has no step implement the run ran/);

  const broken = await pipelineFile('version: 1\nname: x\nsteps: nope\n');
  const bad = await planOf({ status: 'failed', steps, current: null, pipelineFile: broken, startedAt });
  assert.equal(bad.from, 'record');
  assert.match(bad.note ?? '', /does not load now/);
});
