/**
 * The flow of a run (src/run/run-flow.ts, what the pure planner in
 * src/flow/planner.ts decides) executed for real on a fake engine: retries,
 * routes and their visits, lanes that run side by side and merge back, for_each
 * fan-out, and how a failure beside other lanes ends. The clock moves a minute
 * each time it is read (core-run.ts), so no retry's backoff is waited for.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { assertLeftNothing, coreProjects, FakeEngine, onBranch, pipeline, runCommits, runOn, type RunControls } from '../fixtures/core-run.js';
import { git, otherWorktrees } from '../fixtures/project.js';
import type { FakeProcess } from '../fixtures/fake-engine.js';

const project = coreProjects();

/**
 * Resolves once `n` callers have arrived: steps that must be running at once wait for each other here. Should they
 * not run at once, the first gives up after 60 s (a step that fails the test, instead of one that hangs it).
 */
function rendezvous(n: number): () => Promise<void> {
  let arrived = 0;
  let all!: () => void;
  const met = new Promise<void>((r) => (all = r));
  return () => {
    if (++arrived === n) all();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`only ${arrived} of ${n} ran at once`)), 60_000)));
    return Promise.race([met, late]).finally(() => clearTimeout(timer));
  };
}

test('a failed step runs again after its backoff, from the work its failed attempts committed; each attempt recorded', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: flaky\n    run: flaky\n    retries: { max: 3, backoff: 30s }\n  - id: after\n    run: after');
  const engine = new FakeEngine()
    .step('flaky', async (p) => {
      // each attempt sees what the one before left
      const before = (await p.read('tries.txt')) ?? '';
      await p.write('tries.txt', `${before}attempt ${p.attempt}\n`);
      return p.attempt < 3 ? 1 : 0;
    })
    .step('after', (p) => p.write('after.txt', 'ok\n'));
  const { record, reporter } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  const flaky = record.steps.filter((s) => s.id === 'flaky');
  assert.deepEqual(flaky.map((s) => [s.name ?? s.id, s.attempt, s.status, s.retryInMs]), [
    ['flaky', 1, 'failed', 30_000],
    ['flaky#2', 2, 'failed', 60_000],
    ['flaky#3', 3, 'completed', undefined],
  ]);
  assert.equal(onBranch(f, record, 'tries.txt'), 'attempt 1\nattempt 2\nattempt 3');
  assert.deepEqual(runCommits(f, record).map((c) => c.subject), [
    'step/flaky (runner/base:latest): failed (exit 1)',
    'step/flaky#2 (runner/base:latest): failed (exit 1)',
    'step/flaky#3 (runner/base:latest): completed',
    'step/after (runner/base:latest): completed',
  ]);
  // one container per attempt, each of its own name
  assert.deepEqual(engine.entries('create', 'flaky').map((e) => e.name.replace(/^runner-\S+?-flaky/, 'flaky')), ['flaky.1', 'flaky.2', 'flaky.3']);
  assert.ok(reporter.infos.some((m) => /step flaky failed \(exit 1\): it runs again in 30s \(attempt 2\)/.test(m)), reporter.infos.join('\n'));
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('retries run out: the run fails with every attempt recorded; a timed-out or OOM-killed attempt is retried too', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: doomed\n    run: doomed\n    timeout: 300ms\n    retries: { max: 2, backoff: 1s }');
  const engine = new FakeEngine().step('doomed', async (p) => {
    if (p.attempt === 1) await p.oom();
    if (p.attempt === 2) await p.untilStopped();
    return 2;
  });
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'failed');
  assert.deepEqual(record.steps.map((s) => [s.attempt, s.status]), [[1, 'oom'], [2, 'timed_out'], [3, 'failed']]);
  assert.equal(record.steps[2]!.retryInMs, undefined);
});

test('a step the runner refused is not retried', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: s\n    run: s\n    image: example.org/distroless:1\n    secrets: [T]\n    retries: { max: 3, backoff: 1s }', 'secrets: [T]');
  const engine = new FakeEngine({ images: { 'example.org/distroless:1': { shell: false } } });
  const { record } = await runOn(engine, f, file, { secrets: { T: 'value-of-t' } });
  assert.equal(record.status, 'failed');
  assert.deepEqual(record.steps.map((s) => [s.attempt, s.error]), [[1, 'step_not_started']]);
});

const REVIEW_LOOP = `  - id: implement
    run: implement
    max_visits: 3
  - id: review
    run: review
    outputs: [verdict]
    route:
      output: verdict
      to: { CHANGES_REQUESTED: implement }
  - id: ship
    run: ship`;

test('a route sends the run back until the reviewer approves; each visit is an attempt, the routes are recorded', async () => {
  const f = await project();
  const file = await pipeline(f, REVIEW_LOOP);
  const engine = new FakeEngine()
    .step('implement', (p) => p.write('impl.txt', `version ${p.attempt}\n`))
    .step('review', async (p) => {
      const impl = await p.read('impl.txt');
      await p.output({ verdict: impl === 'version 2\n' ? 'APPROVED' : 'CHANGES_REQUESTED' });
    })
    .step('ship', (p) => p.write('shipped', 'yes\n'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.deepEqual(record.steps.map((s) => s.name ?? s.id), ['implement', 'review', 'implement#2', 'review#2', 'ship']);
  assert.deepEqual(record.flow?.routes.map((r) => [r.from, r.to, r.value, r.visit]), [['review', 'implement', 'CHANGES_REQUESTED', 2]]);
  assert.equal(record.flow?.stop, null);
  assert.equal(onBranch(f, record, 'impl.txt'), 'version 2');
});

test('a reviewer that never approves: the run stops at max_visits with loop_limit, all its work committed', async () => {
  const f = await project();
  const file = await pipeline(f, REVIEW_LOOP);
  const engine = new FakeEngine()
    .step('implement', (p) => p.write('impl.txt', `version ${p.attempt}\n`))
    .step('review', (p) => p.output({ verdict: ' CHANGES_REQUESTED\n' }))
    .step('ship', () => assert.fail('must not ship'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'failed');
  assert.equal(record.error?.code, 'loop_limit');
  assert.equal(record.flow?.stop?.code, 'loop_limit');
  assert.match(record.flow?.stop?.message ?? '', /implement/);
  assert.deepEqual(record.steps.map((s) => [s.name ?? s.id, s.status]), [
    ['implement', 'completed'],
    ['review', 'completed'],
    ['implement#2', 'completed'],
    ['review#2', 'completed'],
    ['implement#3', 'completed'],
    ['review#3', 'completed'],
    ['ship', 'skipped'],
  ]);
  assert.equal(engine.entries('begin', 'implement').length, 3);
  assert.equal(onBranch(f, record, 'impl.txt'), 'version 3');
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('steps whose needs are met run at once, each in a lane of its own, merged back in file order', async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: api
    run: api
    needs: []
  - id: ui
    run: ui
    needs: []
  - id: integrate
    run: integrate
    needs: [api, ui]`,
    'max_parallel: 2',
  );
  const both = rendezvous(2);
  let integrated = '';
  const lane = (name: string) => async (p: FakeProcess) => {
    // neither ends before the other has begun: they run at once, or this test never ends
    await both();
    await p.write(`${name}.txt`, `${name} on ${p.env.RUNNER_BRANCH}\n`);
  };
  const engine = new FakeEngine()
    .step('api', lane('api'))
    .step('ui', lane('ui'))
    .step('integrate', async (p) => {
      integrated = `${await p.read('api.txt')}${await p.read('ui.txt')}`;
      await p.write('integrated', 'yes\n');
    });
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  const id = record.runId;
  assert.equal(integrated, `api on run/${id}+api\nui on run/${id}+ui\n`);
  const by = Object.fromEntries(record.steps.map((s) => [s.id, s]));
  assert.equal(by.api!.lane?.branch, `run/${id}+api`);
  assert.equal(by.api!.lane?.merge, 'merged');
  assert.equal(by.ui!.lane?.merge, 'merged');
  // each lane's worktree was its own
  const ws = (step: string) => engine.containers.find((c) => c.step === step)!.spec.mounts.find((m) => m.target === '/home/agent/run-workspace')!.source;
  assert.notEqual(ws('api'), ws('ui'));
  assert.equal(ws('integrate'), record.worktree);
  // the run's history: each lane's commit and its merge, api's first whichever ended first
  const subjects = runCommits(f, record).map((c) => c.subject);
  const merges = subjects.filter((s) => s.startsWith('merge/'));
  assert.deepEqual(merges, [`merge/api (run/${id}+api): completed`, `merge/ui (run/${id}+ui): completed`]);
  assert.equal(subjects.at(-1), 'step/integrate (runner/base:latest): completed');
  // the lanes' branches and worktrees are gone
  assert.equal(git(f.project, 'branch', '--list', `run/${id}+*`), '');
  assert.deepEqual(otherWorktrees(f), []);
  assert.deepEqual(record.flow?.keptBranches, []);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test("lanes that change the same file conflict: nothing of the later one is merged, its branch kept, the run fails", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: a\n    run: a\n    needs: []\n  - id: b\n    run: b\n    needs: []\n  - id: c\n    run: c\n    needs: [a, b]');
  const engine = new FakeEngine()
    .step('a', (p) => p.write('data.txt', 'from a\n'))
    .step('b', (p) => p.write('data.txt', 'from b\n'))
    .step('c', () => assert.fail('must not run'));
  const { record, reporter } = await runOn(engine, f, file);
  const id = record.runId;
  assert.equal(record.status, 'failed');
  assert.equal(record.error?.code, 'merge_conflict');
  const b = record.steps.find((s) => s.id === 'b')!;
  assert.equal(b.lane?.merge, 'conflict');
  assert.deepEqual(b.lane?.files, ['data.txt']);
  assert.equal(onBranch(f, record, 'data.txt'), 'from a');
  assert.deepEqual(record.flow?.keptBranches, [`run/${id}+b`]);
  assert.equal(git(f.project, 'show', `run/${id}+b:data.txt`), 'from b');
  assert.equal(record.steps.find((s) => s.id === 'c')!.status, 'skipped');
  assert.ok(reporter.warnings.some((w) => w.includes("step b's work conflicts with the run's in data.txt")));
  assert.deepEqual(otherWorktrees(f), []);
});

test('a failure that stops the run lets the lane beside it finish and merge; nothing new starts', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: quick\n    run: quick\n    needs: []\n  - id: long\n    run: long\n    needs: []\n  - id: last\n    run: last\n    needs: [quick, long]', 'max_parallel: 2');
  let quickEnded!: () => void;
  const ended = new Promise<void>((r) => (quickEnded = r));
  const engine = new FakeEngine()
    .step('quick', async (p) => {
      await p.write('quick.txt', 'q\n');
      setImmediate(quickEnded);
      return 1;
    })
    .step('long', async (p) => {
      // still working when quick fails the run
      await ended;
      await p.sleep(20);
      await p.write('long.txt', 'l\n');
    })
    .step('last', () => assert.fail('must not start'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'failed');
  const by = Object.fromEntries(record.steps.map((s) => [s.id, s]));
  assert.equal(by.quick!.status, 'failed');
  assert.equal(by.long!.status, 'completed');
  assert.equal(by.long!.lane?.merge, 'merged');
  assert.equal(by.last!.status, 'skipped');
  assert.equal(onBranch(f, record, 'long.txt'), 'l');
  // never stopped: it ended of itself
  assert.deepEqual(engine.entries('term', 'long'), []);
});

test('for_each fans a step out over a list, at most max_parallel at once, merged in item order; later steps see the list of outputs', async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: plan
    run: plan
    outputs: [tasks]
  - id: build
    run: build
    for_each: \${{ steps.plan.outputs.tasks }}
    max_parallel: 2
    outputs: [made]
  - id: report
    run: report
    env: { MADE: "\${{ steps.build.outputs.made }}" }`,
    'max_parallel: 4',
  );
  const items = ['users', 'orders', 'invoices', 'carts'];
  const firstTwo = rendezvous(2);
  let made = '';
  const engine = new FakeEngine()
    .step('plan', (p) => p.output({ tasks: JSON.stringify(items) }))
    .step('build', async (p) => {
      // the first two run at once (or the test fails); the bound keeps any third out meanwhile
      if (Number(p.env.RUNNER_ITEM_INDEX) < 2) await firstTwo();
      await p.write(`${p.env.RUNNER_ITEM}.txt`, `item ${p.env.RUNNER_ITEM_INDEX}\n`);
      await p.output({ made: `${p.env.RUNNER_ITEM}.txt` });
    })
    .step('report', (p) => void (made = p.env.MADE ?? ''));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  const builds = record.steps.filter((s) => s.id === 'build');
  assert.deepEqual(builds.map((s) => [s.name, s.item]).sort(), items.map((v, index) => [`build[${index}]`, { index, value: v }]).sort());
  assert.equal(made, JSON.stringify(items.map((i) => `${i}.txt`)));
  for (const [i, item] of items.entries()) assert.equal(onBranch(f, record, `${item}.txt`), `item ${i}`);
  const merges = runCommits(f, record).map((c) => c.subject).filter((s) => s.startsWith('merge/'));
  assert.deepEqual(merges.map((s) => s.split(' ')[0]), items.map((_, i) => `merge/build[${i}]`));
  assert.equal(engine.peak.get('build'), 2);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('instances of a for_each run at once', async () => {
  const f = await project();
  const file = await pipeline(f, `  - id: each\n    run: each\n    for_each: \${{ inputs.list }}`, 'max_parallel: 3\ninputs:\n  list: { default: \'["a","b","c"]\' }');
  const all = rendezvous(3);
  const engine = new FakeEngine().step('each', async (p) => {
    await all();
    await p.write(`${p.env.RUNNER_ITEM}.txt`, 'x\n');
  });
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded', JSON.stringify(record.steps));
  assert.equal(engine.peak.get('each'), 3);
});

test('a list that is not a JSON list of strings fails the step that made it with bad_list', async () => {
  const f = await project();
  const file = await pipeline(f, `  - id: plan\n    run: plan\n    outputs: [tasks]\n  - id: build\n    run: build\n    for_each: \${{ steps.plan.outputs.tasks }}`);
  const engine = new FakeEngine().step('plan', (p) => p.output({ tasks: 'users, orders' })).step('build', () => assert.fail('must not run'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'failed');
  const plan = record.steps.find((s) => s.id === 'plan')!;
  assert.equal(plan.status, 'failed');
  assert.equal(plan.error, 'bad_list');
  assert.match(plan.message ?? '', /for_each: /);
  assert.equal(engine.entries('create', 'build').length, 0);
});

test('an empty list runs nothing and the run goes on', async () => {
  const f = await project();
  const file = await pipeline(f, `  - id: plan\n    run: plan\n    outputs: [tasks]\n  - id: build\n    run: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n  - id: end\n    run: end`);
  const engine = new FakeEngine().step('plan', (p) => p.output({ tasks: '[]' })).step('end', (p) => p.write('end.txt', 'e\n'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.equal(engine.entries('create', 'build').length, 0);
  assert.equal(onBranch(f, record, 'end.txt'), 'e');
});

test('a cancel while a retry waits: the retry never starts and the run ends canceled', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: flaky\n    run: flaky\n    retries: { max: 5, backoff: 10m }');
  const engine = new FakeEngine().step('flaky', () => 1);
  // canceled once the first attempt has ended (its retry then waits); a clock that stands still: the backoff never passes by itself
  const controls = (c: RunControls) => {
    c.reporter.stepFinished = () => c.cancel.abort();
  };
  const { record } = await runOn(engine, f, file, { controls, clock: () => new Date('2030-01-01T00:00:00Z') });
  assert.equal(record.status, 'canceled');
  assert.deepEqual(record.steps.map((s) => [s.attempt, s.status, s.retryInMs]), [[1, 'failed', undefined]]);
  assert.equal(engine.entries('create', 'flaky').length, 1);
});
