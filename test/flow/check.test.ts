import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatPipelineIssue, PipelineError } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

function problems(steps: string, top = ''): string[] {
  try {
    parsePipeline(`version: 1\nname: f\ndefaults: { image: i }\n${top}steps:\n${steps}`, 'f.yaml');
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => formatPipelineIssue('f.yaml', i));
  }
  return [];
}

const ok = (steps: string, top = '') => assert.deepEqual(problems(steps, top), []);

test('the example of the issue validates: a bounded review loop, retries, needs, fan-out', () => {
  ok(`  - id: implement
    run: x
    max_visits: 3
  - id: review
    run: x
    outputs: [verdict]
    route:
      output: verdict
      to: { CHANGES_REQUESTED: implement }
  - id: test
    run: npm test
    retries: { max: 2, backoff: 30s }
  - id: api
    needs: [test]
    run: x
  - id: ui
    needs: [test]
    run: x
  - id: integrate
    needs: [api, ui]
    run: x
  - id: plan
    run: x
    outputs: [tasks]
  - id: build
    for_each: \${{ steps.plan.outputs.tasks }}
    max_parallel: 3
    run: echo "\${{ item }}"
    outputs: [file]
  - id: after
    run: echo "\${{ steps.build.outputs.file }}"
`);
});

const table: Array<[string, string, RegExp, string?]> = [
  ['needs an unknown step', `  - id: a\n    run: x\n  - id: b\n    needs: [aa]\n    run: x\n`, /steps\[1\]\.needs\[0\].*needs names step "aa", which does not exist/],
  ['needs itself', `  - id: a\n    needs: [a]\n    run: x\n`, /step "a" cannot need itself/],
  ['a cycle of needs', `  - id: a\n    needs: [b]\n    run: x\n  - id: b\n    needs: [a]\n    run: x\n`, /needs makes a cycle: "a" needs "b", which needs "a"; a step can only need steps above it in the file/],
  ['needs a later step (no cycle)', `  - id: a\n    needs: [b]\n    run: x\n  - id: b\n    needs: []\n    run: x\n`, /needs names step "b", which comes later in the file: .*move "b" above "a"/],
  ['a route to an unknown step', `  - id: a\n    run: x\n    outputs: [v]\n    route: { output: v, to: { again: aa } }\n`, /route sends "again" to step "aa", which does not exist/],
  ['a route to a later step', `  - id: a\n    run: x\n    outputs: [v]\n    route: { output: v, to: { skip: b } }\n  - id: b\n    run: x\n`, /route sends "skip" to step "b", which comes later: a route goes back/],
  ['a route on an output the step does not declare', `  - id: a\n    run: x\n    outputs: [verdict]\n    route: { output: verdit, to: { x: a } }\n`, /route reads output "verdit", which step "a" does not declare \(did you mean "verdict"\?\)/],
  ['a route back to a step the router does not need', `  - id: a\n    needs: []\n    run: x\n  - id: b\n    needs: []\n    run: x\n    outputs: [v]\n    route: { output: v, to: { again: a } }\n`, /route sends "again" back to step "a", which "b" does not need/],
  ['a step hanging off the loop', `  - id: impl\n    run: x\n  - id: docs\n    needs: [impl]\n    run: x\n  - id: review\n    needs: [impl]\n    run: x\n    outputs: [v]\n    route: { output: v, to: { again: impl } }\n`, /step "docs" needs "impl" but not "review", so it would run on work the route then makes again.*add "review" to the needs of "docs"/],
  ['a route from a for_each step', `  - id: p\n    run: x\n    outputs: [l]\n  - id: b\n    for_each: \${{ steps.p.outputs.l }}\n    run: x\n    outputs: [v]\n    route: { output: v, to: { again: p } }\n`, /a for_each step cannot route/],
  ['for_each that is not one expression', `  - id: b\n    for_each: "[a, b]"\n    run: x\n`, /for_each takes one expression whose value is a JSON list of strings/],
  ['for_each on a step it does not need', `  - id: p\n    needs: []\n    run: x\n    outputs: [l]\n  - id: q\n    needs: []\n    run: x\n  - id: b\n    needs: [q]\n    for_each: \${{ steps.p.outputs.l }}\n    run: x\n`, /names step "p", which step "b" does not need \(it may not have run yet\): add "p" to its needs:/],
  ['an output of a parallel step, not needed', `  - id: a\n    needs: []\n    run: x\n    outputs: [o]\n  - id: b\n    needs: []\n    run: echo "\${{ steps.a.outputs.o }}"\n`, /names step "a", which step "b" does not need/],
  ['item outside for_each', `  - id: a\n    run: echo "\${{ item }}"\n`, /\$\{\{ item \}\} is the item of a for_each step: step "a" has no for_each/],
  ['max_parallel on a plain step', `  - id: a\n    run: x\n    max_parallel: 2\n`, /max_parallel on a step bounds its for_each instances/],
  ['max_items on a plain step', `  - id: a\n    run: x\n    max_items: 2\n`, /max_items bounds a for_each list: this step has no for_each/],
  ['parallel steps in one persistent directory', `  - id: a\n    needs: []\n    run: x\n  - id: b\n    needs: []\n    run: x\n`, /steps "a" and "b" \(neither needs the other\) would run at once in the one persistent directory.*shared_workspace: true/, 'project: { workspace: persistent_directory }\n'],
  ['an unknown key under retries', `  - id: a\n    run: x\n    retries: { max: 1, delay: 5s }\n`, /unknown key "delay" \(did you mean "backoff"\?\)|unknown key "delay"/],
  ['a bad backoff', `  - id: a\n    run: x\n    retries: { max: 1, backoff: soon }\n`, /expected a duration like 90s/],
];

for (const [name, steps, want, top] of table) {
  test(`validate refuses ${name}`, () => {
    const out = problems(steps, top).join('\n');
    assert.match(out, want);
  });
}

test('parallel steps share a persistent directory when the file says so, or when max_parallel is 1', () => {
  const steps = `  - id: a\n    needs: []\n    run: x\n  - id: b\n    needs: []\n    run: x\n`;
  ok(steps, 'project: { workspace: persistent_directory }\nshared_workspace: true\n');
  ok(steps, 'project: { workspace: persistent_directory }\nmax_parallel: 1\n');
});

test('a route to itself and a loop with parallel steps inside validate', () => {
  ok(`  - id: poll\n    run: x\n    outputs: [s]\n    route: { output: s, to: { pending: poll } }\n`);
  ok(`  - id: api\n    needs: []\n    run: x\n  - id: ui\n    needs: []\n    run: x\n  - id: review\n    needs: [api, ui]\n    run: x\n    outputs: [v]\n    route: { output: v, to: { again: api } }\n  - id: ship\n    run: x\n`);
});

test('validate refuses max_visits on a step no route sends the run to, and names a default need in a cycle', () => {
  assert.match(problems(`  - id: a\n    run: x\n    max_visits: 2\n`).join('\n'), /max_visits bounds how often a route brings the run back to step "a", and no route: sends it here/);
  assert.match(
    problems(`  - id: a\n    needs: [c]\n    run: x\n  - id: b\n    run: x\n  - id: c\n    run: x\n`).join('\n'),
    /needs makes a cycle: "a" needs "c", which needs "a" \(through b\) \("c", "b" has no needs:, so it needs the step before it\)/,
  );
});
