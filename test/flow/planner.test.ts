import assert from 'node:assert/strict';
import { test } from 'node:test';
import { flowPlan } from '../../src/flow/flow-plan.js';
import { FlowPlanner, type Unit, type UnitEnd } from '../../src/flow/planner.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

/** A file's steps, each with `run: x` so it validates; extra keys per step as YAML lines. */
function flowOf(steps: string, top = ''): ReturnType<typeof flowPlan> {
  return flowPlan(parsePipeline(`version: 1\nname: t\ndefaults: { image: i }\n${top}steps:\n${steps}`, 't.yaml'), 4);
}

interface Script {
  /** how each run of a unit ends, by its name (implement#2, build[1]); default completed, no outputs */
  ends?: Record<string, Partial<UnitEnd>>;
  /** lanes whose merge conflicts, by key */
  conflicts?: string[];
  /** finish units one at a time, last started first (to show merges wait for file order) */
  reverse?: boolean;
  inputs?: Record<string, string>;
  /** cancel once this unit has started */
  cancelAfter?: string;
}

/** Drives the planner as the orchestrator would, with every unit's end scripted; returns what happened, in order. */
function drive(plan: ReturnType<typeof flowPlan>, s: Script = {}) {
  const flow = new FlowPlanner(plan, s.inputs ?? {});
  const trace: string[] = [];
  let now = 0;
  const running: Unit[] = [];
  for (let guard = 0; guard < 500; guard++) {
    const n = flow.next(now);
    for (const u of n.start) {
      trace.push(`start ${u.name}`);
      running.push(u);
      if (s.cancelAfter === u.name) flow.cancel();
    }
    if (n.merge) {
      const conflict = s.conflicts?.includes(n.merge.key);
      trace.push(`${conflict ? 'conflict' : 'merge'} ${n.merge.name}`);
      flow.merged(n.merge, conflict ? { files: ['a.txt'], message: 'both changed a.txt' } : undefined);
      continue;
    }
    if (n.done) return { trace, done: n.done, flow, together: maxTogether(trace) };
    const u = s.reverse ? running.pop() : running.shift();
    if (!u) {
      assert.ok(n.wakeAt !== undefined, `stuck: nothing running, nothing to wait for (${trace.join(', ')})`);
      now = n.wakeAt;
      trace.push(`wait ${n.wakeAt}`);
      continue;
    }
    const end = { status: 'completed' as const, outputs: {}, ...s.ends?.[u.name] };
    const v = flow.finished(u, end as UnitEnd, now);
    trace.push(`end ${u.name} ${v.failure ? 'failed' : end.status}${v.retryInMs !== undefined ? ` retry in ${v.retryInMs}` : ''}${v.failure ? ` (${v.failure})` : ''}`);
  }
  throw new Error('the flow did not end');
}

function maxTogether(trace: string[]): number {
  let n = 0;
  let max = 0;
  for (const t of trace) {
    if (t.startsWith('start ')) max = Math.max(max, ++n);
    if (t.startsWith('end ') && !t.includes('retry')) n--;
    else if (t.startsWith('end ')) n--;
  }
  return max;
}

const LOOP = `  - id: implement
    run: x
  - id: review
    run: x
    outputs: [verdict]
    route: { output: verdict, to: { CHANGES_REQUESTED: implement } }
  - id: ship
    run: x
`;
const changes = { status: 'completed' as const, outputs: { verdict: 'CHANGES_REQUESTED' } };

const cases: Array<{ name: string; steps: string; top?: string; script?: Script; trace?: string[]; status: string; stop?: string }> = [
  {
    name: 'a file without flow keys runs in file order, as before',
    steps: `  - id: a\n    run: x\n  - id: b\n    run: x\n  - id: c\n    run: x\n`,
    trace: ['start a', 'end a completed', 'start b', 'end b completed', 'start c', 'end c completed'],
    status: 'succeeded',
  },
  {
    name: 'a failed step stops the run; the steps after it never start',
    steps: `  - id: a\n    run: x\n  - id: b\n    run: x\n  - id: c\n    run: x\n`,
    script: { ends: { b: { status: 'failed' } } },
    trace: ['start a', 'end a completed', 'start b', 'end b failed'],
    status: 'failed',
  },
  {
    name: 'continue_on_error lets the run go on past a failed step',
    steps: `  - id: a\n    run: x\n    continue_on_error: true\n  - id: b\n    run: x\n`,
    script: { ends: { a: { status: 'failed' } } },
    trace: ['start a', 'end a failed', 'start b', 'end b completed'],
    status: 'succeeded',
  },
  {
    name: 'a review that asks for changes twice, then approves: six runs, attempts numbered',
    steps: LOOP,
    script: { ends: { review: changes, 'review#2': changes, 'review#3': { outputs: { verdict: 'APPROVED' } } } },
    trace: [
      'start implement', 'end implement completed', 'start review', 'end review completed',
      'start implement#2', 'end implement#2 completed', 'start review#2', 'end review#2 completed',
      'start implement#3', 'end implement#3 completed', 'start review#3', 'end review#3 completed',
      'start ship', 'end ship completed',
    ],
    status: 'succeeded',
  },
  {
    name: 'a reviewer that never approves stops at the bound: loop_limit',
    steps: LOOP,
    script: { ends: { review: changes, 'review#2': changes, 'review#3': changes } },
    trace: [
      'start implement', 'end implement completed', 'start review', 'end review completed',
      'start implement#2', 'end implement#2 completed', 'start review#2', 'end review#2 completed',
      'start implement#3', 'end implement#3 completed', 'start review#3', 'end review#3 completed',
    ],
    status: 'failed',
    stop: 'loop_limit',
  },
  {
    name: 'max_visits: 1 allows no way back',
    steps: LOOP.replace('  - id: implement\n    run: x\n', '  - id: implement\n    run: x\n    max_visits: 1\n'),
    script: { ends: { review: changes } },
    trace: ['start implement', 'end implement completed', 'start review', 'end review completed'],
    status: 'failed',
    stop: 'loop_limit',
  },
  {
    name: 'a value the route does not name goes on (whitespace around it ignored)',
    steps: LOOP,
    script: { ends: { review: { outputs: { verdict: ' LGTM \n' } } } },
    trace: ['start implement', 'end implement completed', 'start review', 'end review completed', 'start ship', 'end ship completed'],
    status: 'succeeded',
  },
  {
    name: 'a route to itself runs the step again',
    steps: `  - id: poll\n    run: x\n    outputs: [state]\n    max_visits: 2\n    route: { output: state, to: { pending: poll } }\n`,
    script: { ends: { poll: { outputs: { state: 'pending' } } } },
    trace: ['start poll', 'end poll completed', 'start poll#2', 'end poll#2 completed'],
    status: 'succeeded',
  },
  {
    name: 'a flaky step succeeds on its third attempt: retries wait, doubling',
    steps: `  - id: t\n    run: x\n    retries: { max: 2, backoff: 30s }\n  - id: after\n    run: x\n`,
    script: { ends: { t: { status: 'failed' }, 't#2': { status: 'timed_out' } } },
    trace: ['start t', 'end t failed retry in 30000', 'wait 30000', 'start t#2', 'end t#2 timed_out retry in 60000', 'wait 90000', 'start t#3', 'end t#3 completed', 'start after', 'end after completed'],
    status: 'succeeded',
  },
  {
    name: 'retries run out: the run fails',
    steps: `  - id: t\n    run: x\n    retries: { max: 1, backoff: 1s }\n`,
    script: { ends: { t: { status: 'failed' }, 't#2': { status: 'oom' } } },
    trace: ['start t', 'end t failed retry in 1000', 'wait 1000', 'start t#2', 'end t#2 oom'],
    status: 'failed',
  },
  {
    name: 'a step the runner refused (workspace_tampered) is never retried',
    steps: `  - id: t\n    run: x\n    retries: { max: 3 }\n`,
    script: { ends: { t: { status: 'failed', error: 'workspace_tampered' } } },
    trace: ['start t', 'end t failed'],
    status: 'failed',
  },
  {
    name: 'steps whose needs are met run at once, and merge back in file order',
    steps: `  - id: test\n    run: x\n  - id: api\n    needs: [test]\n    run: x\n  - id: ui\n    needs: [test]\n    run: x\n  - id: integrate\n    needs: [api, ui]\n    run: x\n`,
    script: { reverse: true },
    trace: ['start test', 'end test completed', 'start api', 'start ui', 'end ui completed', 'end api completed', 'merge api', 'merge ui', 'start integrate', 'end integrate completed'],
    status: 'succeeded',
  },
  {
    name: 'a merge conflict fails the run, naming the files',
    steps: `  - id: api\n    needs: []\n    run: x\n  - id: ui\n    needs: []\n    run: x\n  - id: integrate\n    needs: [api, ui]\n    run: x\n`,
    script: { conflicts: ['ui'] },
    trace: ['start api', 'start ui', 'end api completed', 'merge api', 'end ui completed', 'conflict ui'],
    status: 'failed',
    stop: 'merge_conflict',
  },
  {
    name: 'max_parallel bounds how many run at once',
    steps: `  - id: a\n    needs: []\n    run: x\n  - id: b\n    needs: []\n    run: x\n  - id: c\n    needs: []\n    run: x\n`,
    top: 'max_parallel: 2\n',
    trace: ['start a', 'start b', 'end a completed', 'start c', 'merge a', 'end b completed', 'merge b', 'end c completed', 'merge c'],
    status: 'succeeded',
  },
  {
    name: 'a failed parallel step lets its neighbour finish and merges both; nothing new starts',
    steps: `  - id: api\n    needs: []\n    run: x\n  - id: ui\n    needs: []\n    run: x\n  - id: integrate\n    needs: [api, ui]\n    run: x\n`,
    script: { ends: { api: { status: 'failed' } } },
    trace: ['start api', 'start ui', 'end api failed', 'merge api', 'end ui completed', 'merge ui'],
    status: 'failed',
  },
  {
    name: 'fan-out: one instance per item, at most max_parallel at once, merged in item order',
    steps: `  - id: plan\n    run: x\n    outputs: [tasks]\n  - id: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n    max_parallel: 2\n    run: x\n  - id: after\n    run: x\n`,
    script: { ends: { plan: { outputs: { tasks: '["a","b","c"]' } } }, reverse: true },
    trace: ['start plan', 'end plan completed', 'start build[0]', 'start build[1]', 'end build[1] completed', 'start build[2]', 'end build[2] completed', 'end build[0] completed', 'merge build[0]', 'merge build[1]', 'merge build[2]', 'start after', 'end after completed'],
    status: 'succeeded',
  },
  {
    name: 'a list longer than max_items fails the step that made it',
    steps: `  - id: plan\n    run: x\n    outputs: [tasks]\n  - id: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n    max_items: 3\n    run: x\n`,
    script: { ends: { plan: { outputs: { tasks: '["a","b","c","d"]' } } } },
    trace: ['start plan', 'end plan failed (output tasks, the for_each list of step build: it has 4 items, more than the 3 the step takes (max_items: 3))'],
    status: 'failed',
    stop: 'bad_list',
  },
  {
    name: 'a list that is not JSON strings fails the step that made it, not retried',
    steps: `  - id: plan\n    run: x\n    outputs: [tasks]\n    retries: { max: 2 }\n  - id: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n    run: x\n`,
    script: { ends: { plan: { outputs: { tasks: '[1, 2]' } } } },
    trace: ['start plan', 'end plan failed (output tasks, the for_each list of step build: item 0 is not a string (got "1"): each item must be a string)'],
    status: 'failed',
    stop: 'bad_list',
  },
  {
    name: 'an empty list: the step has nothing to do and the run goes on',
    steps: `  - id: plan\n    run: x\n    outputs: [tasks]\n  - id: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n    run: x\n  - id: after\n    run: x\n`,
    script: { ends: { plan: { outputs: { tasks: '[]' } } } },
    trace: ['start plan', 'end plan completed', 'start after', 'end after completed'],
    status: 'succeeded',
  },
  {
    name: 'cancel during parallel steps: nothing merges, nothing new starts',
    steps: `  - id: api\n    needs: []\n    run: x\n  - id: ui\n    needs: []\n    run: x\n  - id: integrate\n    needs: [api, ui]\n    run: x\n`,
    script: { cancelAfter: 'ui', ends: { api: { status: 'canceled' }, ui: { status: 'canceled' } } },
    trace: ['start api', 'start ui', 'end api canceled', 'end ui canceled'],
    status: 'canceled',
  },
  {
    name: 'a loop whose body runs in parallel: both run again on the way back',
    steps: `  - id: api\n    needs: []\n    run: x\n  - id: ui\n    needs: []\n    run: x\n  - id: review\n    needs: [api, ui]\n    run: x\n    outputs: [verdict]\n    route: { output: verdict, to: { again: api } }\n`,
    script: { ends: { review: { outputs: { verdict: 'again' } } } },
    trace: ['start api', 'start ui', 'end api completed', 'merge api', 'end ui completed', 'merge ui', 'start review', 'end review completed', 'start api#2', 'end api#2 completed', 'merge api#2', 'start review#2', 'end review#2 completed'],
    status: 'succeeded',
  },
];

for (const c of cases) {
  test(`flow: ${c.name}`, () => {
    const r = drive(flowOf(c.steps, c.top), c.script);
    if (c.trace) assert.deepEqual(r.trace, c.trace);
    assert.equal(r.done.status, c.status);
    assert.equal(r.done.stop?.code, c.stop);
  });
}

test('flow: the loop_limit stop names the step and its visits', () => {
  const r = drive(flowOf(LOOP), { ends: { review: changes, 'review#2': changes, 'review#3': changes } });
  assert.equal(r.done.stop?.step, 'implement');
  assert.equal(r.done.stop?.visits, 3);
  assert.match(r.done.stop!.message, /max_visits: 3/);
  assert.deepEqual(r.flow.routes.map((x) => `${x.from}->${x.to}#${x.visit}`), ['review->implement#2', 'review->implement#3']);
  assert.deepEqual(r.flow.skipped(), ['ship']);
});

test('flow: a later step sees the latest outputs, and every instance\'s as JSON lists', () => {
  const r = drive(
    flowOf(`  - id: plan\n    run: x\n    outputs: [tasks]\n  - id: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n    run: x\n    outputs: [file]\n`),
    { ends: { plan: { outputs: { tasks: '["a","b"]' } }, 'build[0]': { outputs: { file: 'a.txt' } }, 'build[1]': { outputs: { file: 'b.txt' } } } },
  );
  assert.deepEqual({ ...r.flow.outputs.get('build') }, { file: '["a.txt","b.txt"]' });
});

test('flow: fan-out over an input list', () => {
  const r = drive(flowOf(`  - id: build\n    for_each: \${{ inputs.files }}\n    run: x\n`, 'inputs:\n  files: { default: "[]" }\n'), { inputs: { files: '["x","y"]' } });
  assert.deepEqual(r.trace.filter((t) => t.startsWith('start')), ['start build[0]', 'start build[1]']);
});

test('flow: the default max_parallel is the number of cores', () => {
  const steps = Array.from({ length: 6 }, (_, i) => `  - id: s${i}\n    needs: []\n    run: x\n`).join('');
  assert.equal(drive(flowOf(steps)).together, 4);
});

test('flow: a merge conflict in a step that routes stops the run as a conflict, takes no route', () => {
  const r = drive(
    flowOf(`  - id: t\n    run: x\n    max_visits: 1\n  - id: side\n    needs: []\n    run: x\n  - id: r\n    needs: [t]\n    run: x\n    outputs: [v]\n    route: { output: v, to: { AGAIN: t } }\n`),
    { ends: { r: { outputs: { v: 'AGAIN' } } }, conflicts: ['r'] },
  );
  assert.equal(r.done.stop?.code, 'merge_conflict');
  assert.deepEqual(r.flow.routes, []);
});

test('flow: an output named like an Object member is only a name', () => {
  const r = drive(
    flowOf(`  - id: plan\n    run: x\n    outputs: [constructor]\n  - id: build\n    for_each: \${{ steps.plan.outputs.constructor }}\n    run: x\n`),
    {},
  );
  assert.equal(r.done.stop?.code, 'bad_list');
  assert.match(r.done.stop!.message, /it is empty/);
  const routed = drive(flowOf(`  - id: a\n    run: x\n    outputs: [toString]\n    route: { output: toString, to: { again: a } }\n`), {});
  assert.equal(routed.done.status, 'succeeded');
});

test('flow: a failure stops new starts at once (a waiting retry, the other instances), lanes still merge', () => {
  const r = drive(
    flowOf(`  - id: b\n    needs: []\n    run: x\n    retries: { max: 3, backoff: 1m }\n  - id: a\n    needs: []\n    run: x\n`),
    { ends: { b: { status: 'failed' }, a: { status: 'failed' } } },
  );
  assert.deepEqual(r.trace.filter((t) => t.startsWith('start')), ['start b', 'start a']);
  assert.equal(r.done.status, 'failed');
  const fan = drive(
    flowOf(`  - id: p\n    run: x\n    outputs: [l]\n  - id: build\n    for_each: \${{ steps.p.outputs.l }}\n    max_parallel: 1\n    run: x\n`),
    { ends: { p: { outputs: { l: '["a","b","c"]' } }, 'build[0]': { status: 'failed' } } },
  );
  assert.deepEqual(fan.trace.filter((t) => t.startsWith('start')), ['start p', 'start build[0]']);
  assert.deepEqual(fan.flow.unstarted().map((u) => u.name), ['build[1]', 'build[2]']);
});

test('flow: chained fan-out reads the first fan-out\'s outputs as a list; an empty fan-out gives empty lists', () => {
  const steps = `  - id: plan\n    run: x\n    outputs: [tasks]\n  - id: build\n    for_each: \${{ steps.plan.outputs.tasks }}\n    run: x\n    outputs: [file]\n  - id: check\n    for_each: \${{ steps.build.outputs.file }}\n    run: x\n`;
  const r = drive(flowOf(steps), { ends: { plan: { outputs: { tasks: '["a","b"]' } }, 'build[0]': { outputs: { file: 'a.txt' } }, 'build[1]': { outputs: { file: 'b.txt' } } } });
  assert.equal(r.done.status, 'succeeded');
  assert.deepEqual(r.trace.filter((t) => t.startsWith('start check')), ['start check[0]', 'start check[1]']);
  const empty = drive(flowOf(steps), { ends: { plan: { outputs: { tasks: '[]' } } } });
  assert.equal(empty.done.status, 'succeeded');
  assert.deepEqual(empty.flow.outputs.get('build'), Object.assign(Object.create(null), { file: '[]' }));
});
