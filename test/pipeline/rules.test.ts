/** The rules of an approval gate (src/pipeline/rules.ts approvalProblems, schema.ts approvalSchema), through the parser as a file meets them. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PipelineError, formatPipelineIssue } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const file = (steps: string, top = '') => `version: 1
name: gated
project: { path: ../app }
defaults: { image: runner/base:latest }
${top}agents:
  planner:
    image: runner/base:latest
    command: ["sh", "-c", "\${{ prompt }}"]
steps:
  - id: plan
    run: echo plan > PLAN.md
${steps}`;

function problems(text: string): string[] {
  try {
    parsePipeline(text, 'x.yaml');
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => formatPipelineIssue('x.yaml', i));
  }
  return [];
}

test('a gate with a prompt, a timeout, needs: and max_visits: is valid; its timeout is a duration; its outputs are decision, comment and by', () => {
  const text = file(`  - id: approve
    name: Approve the plan
    needs: [plan]
    approval:
      prompt: Read PLAN.md on the run's branch; approve to implement it.
      timeout: 48h
  - id: implement
    needs: [approve]
    run: echo "\${{ steps.approve.outputs.comment }} \${{ steps.approve.outputs.decision }} \${{ steps.approve.outputs.by }}"
`);
  assert.deepEqual(problems(text), []);
  const p = parsePipeline(text, 'x.yaml');
  assert.equal(p.steps[1]!.approval?.timeout, 48 * 3600_000);
  assert.equal(p.steps[1]!.approval?.prompt, "Read PLAN.md on the run's branch; approve to implement it.");
});

test('a gate runs nothing: run:, command:, agent:, image:, prompt:, env:, secrets:, outputs: on it are each refused, at their key, saying what to do', () => {
  for (const [key, yaml] of [
    ['run', 'run: echo hi'],
    ['command', 'command: ["sh", "-c", "true"]'],
    ['agent', 'agent: planner'],
    ['image', 'image: alpine'],
    ['prompt', 'prompt: do it'],
    ['env', 'env: { A: b }'],
    ['secrets', 'secrets: [KEY]'],
    ['outputs', 'outputs: [x]'],
    ['timeout', 'timeout: 5m'],
  ] as const) {
    const found = problems(file(`  - id: approve
    approval: { prompt: ok? }
    ${yaml}
`, key === 'secrets' ? 'secrets: [KEY]\n' : ''));
    const mine = found.filter((p) => p.includes(`steps[1].${key}`));
    assert.equal(mine.length, 1, `${key}: ${found.join('\n')}`);
    assert.match(mine[0]!, new RegExp(`step "approve" is an approval gate: it runs nothing, so ${key}: does not apply .*put ${key}: on a step of its own`));
    assert.match(mine[0]!, /^x\.yaml:\d+:5 /, 'said at the key');
  }
});

test("a gate's notify: names entries of the top-level notify:; an unknown name is refused, saying where to add it", () => {
  const found = problems(file(`  - id: approve
    approval:
      prompt: ok?
      notify: [team, ops]
`));
  assert.equal(found.length, 2, found.join('\n'));
  assert.match(found[0]!, /steps\[1\]\.approval\.notify\[0\]: unknown notify entry "team"; add it under the top-level notify:/);
  assert.match(found[1]!, /steps\[1\]\.approval\.notify\[1\]: unknown notify entry "ops"/);
  // a name that is a property of every object is no entry either
  const proto = problems(file(`  - id: approve
    approval: { prompt: ok?, notify: [constructor, __proto__, toString] }
`));
  assert.equal(proto.filter((p) => /unknown notify entry/.test(p)).length, 3, proto.join('\n'));
});

test('an approval: without a prompt, with an empty one, a bad timeout or an unknown key is refused', () => {
  const noPrompt = problems(file(`  - id: approve
    approval: { timeout: 1h }
`));
  assert.ok(noPrompt.some((p) => /steps\[1\]\.approval: missing required key "prompt"/.test(p)), noPrompt.join('\n'));
  const empty = problems(file(`  - id: approve
    approval: { prompt: "" }
`));
  assert.ok(empty.some((p) => /expected what the person deciding is asked/.test(p)), empty.join('\n'));
  const badTimeout = problems(file(`  - id: approve
    approval: { prompt: ok?, timeout: forever }
`));
  assert.ok(badTimeout.some((p) => /steps\[1\]\.approval\.timeout: expected a duration/.test(p)), badTimeout.join('\n'));
  const typo = problems(file(`  - id: approve
    approval: { prompt: ok?, timout: 1h }
`));
  assert.ok(typo.some((p) => /steps\[1\]\.approval\.timout: unknown key "timout" \(did you mean "timeout"\?\)/.test(p)), typo.join('\n'));
});

test("a step reading an output a gate does not give is refused, naming the gate's outputs (summary too: a gate has none)", () => {
  const found = problems(file(`  - id: approve
    approval: { prompt: ok? }
  - id: implement
    needs: [approve]
    run: echo "\${{ steps.approve.outputs.verdict }}"
  - id: summary
    needs: [approve]
    run: echo "\${{ steps.approve.outputs.summary }}"
`));
  assert.ok(found.some((p) => /steps\.approve\.outputs\.verdict \}\}: step "approve" is an approval gate, whose outputs are decision, comment, by$/.test(p)), found.join('\n'));
  assert.ok(!found.some((p) => /add it to its outputs/.test(p)), 'a gate cannot have outputs: (its rules refuse them): the file is not told to add one');
  assert.ok(found.some((p) => /steps\.approve\.outputs\.summary \}\}: step "approve" is an approval gate/.test(p)), 'a gate has no summary: ' + found.join('\n'));
});
