import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PipelineError, formatPipelineIssue } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const VALID = `version: 1
name: implement-feature
project:
  path: ../my-app
  base: main
defaults:
  image: runner/base:latest
  resources: { memory: 2g, cpus: 1.5, pids: 512 }
  timeout: 30m
env:
  LANG: C.UTF-8
secrets: [ANTHROPIC_API_KEY]
agents:
  finn:
    image: runner/claude-code:latest
    command: ["claude", "-p", "\${{ prompt }}"]
    secrets: [ANTHROPIC_API_KEY]
    network: bridge
steps:
  - id: design
    agent: finn
    prompt: Write DESIGN.md
    outputs: [summary]
  - id: test
    run: npm test
    timeout: 10m
    resources: { memory: 4g }
    env: { CI: "true", DESIGN: "\${{ steps.design.outputs.summary }}" }
`;

function problems(text: string): string[] {
  try {
    parsePipeline(text, 'x.yaml');
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => formatPipelineIssue('x.yaml', i));
  }
  return [];
}

test('a valid file parses, with durations and sizes converted', () => {
  const p = parsePipeline(VALID, 'x.yaml');
  assert.equal(p.name, 'implement-feature');
  assert.equal(p.defaults?.timeout, 30 * 60_000);
  assert.equal(p.defaults?.resources?.memory, 2 * 1024 ** 3);
  assert.equal(p.steps[1]?.resources?.memory, 4 * 1024 ** 3);
  assert.equal(p.project.push, 'auto');
  assert.equal(p.project.remote, 'origin');
});

test('every problem is reported at once with its line, column and path', () => {
  const text = `version: 1
name: bad
defaults:
  imgae: runner/base
steps:
  - id: one
    image: runner/base:latest
    run: echo
    resources:
      memory: lots
    timeout: soon
  - id: one
    image: runner/base:latest
    command: []
`;
  assert.deepEqual(problems(text), [
    'x.yaml:4:3 defaults.imgae: unknown key "imgae" (did you mean "image"?)',
    'x.yaml:10:15 steps[0].resources.memory: expected a size like 512m or 2g, got "lots"',
    'x.yaml:11:14 steps[0].timeout: expected a duration like 90s, 30m or 1h, got "soon"',
    'x.yaml:12:9 steps[1].id: duplicate step id "one" (first used by steps[0])',
    'x.yaml:14:14 steps[1].command: expected a non-empty list of arguments',
  ]);
});

test('rules: duplicate ids, unknown agents, references that do not exist', () => {
  const text = `version: 1
name: refs
defaults: { image: img }
agents:
  finn: { command: ["x", "\${{ prompt }}"] }
steps:
  - id: a
    run: echo \${{ steps.b.outputs.x }}
  - id: a
    agent: fin
  - id: c
    agent: finn
  - id: d
    run: echo \${{ steps.a.outputs.nope }} \${{ secrets.X }}
    secrets: [TOKEN]
`;
  assert.deepEqual(problems(text), [
    'x.yaml:5:26 agents.finn.command[1]: step "c" uses ${{ prompt }} but has no prompt:',
    'x.yaml:8:10 steps[0].run: ${{ steps.b.outputs.x }} names step "b", which does not exist',
    'x.yaml:9:9 steps[1].id: duplicate step id "a" (first used by steps[0])',
    'x.yaml:10:12 steps[1].agent: unknown agent "fin" (did you mean "finn"?); known agents: finn',
    'x.yaml:14:10 steps[3].run: ${{ steps.a.outputs.nope }}: step "a" declares no output "nope" (add it to its outputs: list)',
    'x.yaml:14:10 steps[3].run: ${{ secrets.X }}: secrets are not expressions here; list X under the top-level secrets: and the step\'s secrets:, and it reaches the step as the environment variable X ("$X" in run:), masked in every log',
    'x.yaml:15:15 steps[3].secrets[0]: secret TOKEN is not declared in the top-level secrets: list',
  ]);
});

test('rules: in command: an expression is a whole argument or the file is refused, whatever the program', () => {
  // Every form a security review used to get an input run as code past a check that recognised shells.
  const spliced = [
    '["sh", "-Cc", "echo ${{ inputs.topic }}"]',
    '["bash", "-c", "-e", "echo ${{ inputs.topic }}"]',
    '["sh", "-c", "--", "echo ${{ inputs.topic }}"]',
    '["env", "-i", "sh", "-c", "echo ${{ inputs.topic }}"]',
    '["timeout", "10", "sh", "-c", "echo ${{ inputs.topic }}"]',
    '["python3", "-c", "print(\'${{ inputs.topic }}\')"]',
    '["node", "-e", "console.log(`${{ inputs.topic }}`)"]',
    '["/bin/bash", "-o", "pipefail", "-ec", "claude -p \'${{ prompt }}\'"]',
    '["tool", "--topic=${{ inputs.topic }}"]',
    '["tool", " ${{ inputs.topic }}"]',
    '["tool", "${{ inputs.topic }}${{ inputs.topic }}"]',
    '["sh", "-c", "${{ inputs.topic }}; echo $${{ y }}"]',
  ];
  for (const command of spliced) {
    const text = `version: 1\nname: shells\ndefaults: { image: img }\ninputs: { topic: { default: x } }\nsteps:\n  - id: a\n    prompt: hi\n    command: ${command}\n`;
    const out = problems(text);
    assert.equal(out.length, 1, `${command}: ${out.join('\n')}`);
    assert.match(out[0]!, /^x\.yaml:8:\d+ steps\[0\]\.command\[\d\]: in command: an expression must be a whole argument/, command);
  }
  const fine = `version: 1
name: fine
defaults: { image: img }
inputs: { topic: { default: x } }
agents:
  finn: { command: ["claude", "-p", "\${{ prompt }}"] }
steps:
  - id: a
    command: ["sh", "-c", "echo \\"$1\\"", "sh", "\${{ inputs.topic }}"]
  - id: b
    command: ["printf", "%s", "\${{inputs.topic}}", "$\${{ not.an.expression }} stays text"]
  - id: c
    agent: finn
    prompt: "topic: \${{ inputs.topic }}"
`;
  assert.deepEqual(problems(fine), []);
  const agentSpliced = fine.replace('"-p", "${{ prompt }}"', '"-p", "go: ${{ prompt }}"');
  assert.match(problems(agentSpliced).join('\n'), /agents\.finn\.command\[2\]: in command: an expression must be a whole argument/);
});

test('missing keys, a bad name, a step without image or command', () => {
  const text = `name: "../../etc"
steps:
  - id: Bad Id
  - id: ok
`;
  assert.deepEqual(problems(text), [
    'x.yaml:1:1 missing required key "version"',
    'x.yaml:1:7 name: expected a name of letters, digits, ".", "_" and "-"',
    'x.yaml:3:9 steps[0].id: expected a step id of lowercase letters, digits, _ and -',
    'x.yaml:4:5 steps[1]: step "ok" has nothing to run: give it run: (a script) or command: (an argv list)',
    'x.yaml:4:5 steps[1]: step "ok" has no image: set image: on the step, its agent or defaults',
  ]);
  assert.deepEqual(problems('version: 1\nname: n\nsteps:\n  - id: ok\n'), [
    'x.yaml:4:5 steps[0]: step "ok" has nothing to run: give it run: (a script) or command: (an argv list)',
    'x.yaml:4:5 steps[0]: step "ok" has no image: set image: on the step, its agent or defaults',
  ]);
});

test('YAML syntax errors carry their position', () => {
  const out = problems('version: 1\nname: [unclosed\n');
  assert.equal(out.length >= 1, true);
  assert.match(out[0]!, /^x\.yaml:\d+:\d+ YAML: /);
});

test('schedule entries: a bad cron expression or time zone is an error with its place', () => {
  const text = `version: 1
name: s
defaults: { image: img }
steps:
  - id: a
    run: "true"
schedule:
  - cron: "0 6 * * 1-5"
    timezone: Europe/Berlin
  - cron: "61 * * * *"
  - cron: "0 6 * * *"
    timezone: Mars/Olympus
`;
  const out = problems(text);
  assert.equal(out.length, 2, out.join('\n'));
  assert.match(out[0]!, /^x\.yaml:10:\d+ schedule\[1\]\.cron: /);
  assert.match(out[1]!, /^x\.yaml:11:\d+ schedule\[2\]\.cron: .*Mars\/Olympus/);
  assert.equal(parsePipeline(text.split('  - cron: "61')[0]!, 'x.yaml').schedule?.[0]?.overlap, 'skip');
});

test('inputs: ${{ inputs.<name> }} must name a declared input; a scheduled pipeline needs a default for each', () => {
  const text = `version: 1
name: i
defaults: { image: img }
inputs:
  topic: { description: what to write about }
  days: { default: 7 }
schedule:
  - cron: "0 6 * * *"
steps:
  - id: a
    prompt: "Write about \${{ inputs.topic }} over \${{ inputs.days }} days"
    command: ["agent", "\${{ prompt }}"]
  - id: b
    run: echo "\${{ inputs.topik }}"
  - id: c
    prompt: "again: \${{ prompt }}"
    command: ["agent"]
`;
  const out = problems(text);
  assert.equal(out.length, 3, out.join('\n'));
  assert.match(out[0]!, /^x\.yaml:5:\d+ inputs\.topic: input topic has no default, so a scheduled run would have no value for it/);
  assert.match(out[1]!, /steps\[1\]\.run: \$\{\{ inputs\.topik \}\} names an input that is not declared \(did you mean "topic"\?\)/);
  assert.match(out[2]!, /steps\[2\]\.prompt: a prompt cannot use \$\{\{ prompt \}\}/);
  const ok = parsePipeline(text.replace('topic: { description: what to write about }', 'topic: { default: rust }').replace('topik', 'topic').replace('again: ${{ prompt }}', 'again'), 'x.yaml');
  assert.deepEqual(ok.inputs, { topic: { default: 'rust' }, days: { default: '7' } }, 'a number default is taken as text');
});

test('a YAML alias bomb is refused with the place of its first alias', () => {
  const bomb = ['version: 1', 'name: bomb', 'a: &a ["x","x","x","x","x","x","x","x","x"]'];
  for (const [i, c] of 'bcdefghi'.split('').entries()) bomb.push(`${c}: &${c} [${Array(9).fill(`*${'abcdefghi'[i]}`).join(',')}]`);
  const out = problems(`${bomb.join('\n')}\nsteps: []\n`);
  assert.equal(out.length, 1, out.join('\n'));
  assert.match(out[0]!, /^x\.yaml:4:\d+ YAML: .*aliases \(\*name\) expand too far/);
});

test('every problem at once: a typo does not hide a bad reference, a bad cron, an input a schedule needs', () => {
  const text = `version: 1
name: all
defaults: { image: img }
inputs: { topic: {} }
schedule:
  - cron: "61 * * * *"
steps:
  - id: a
    run: echo a
    outptus: [x]
  - id: b
    run: echo "\${{ steps.c.outputs.x }}"
    resources: { cpus: two }
`;
  const out = problems(text);
  assert.ok(out.some((l) => /steps\[0\]\.outptus: unknown key "outptus" \(did you mean "outputs"\?\)/.test(l)), out.join('\n'));
  assert.ok(out.some((l) => /steps\[1\]\.run: \$\{\{ steps\.c\.outputs\.x \}\} names step "c", which does not exist/.test(l)), out.join('\n'));
  assert.ok(out.some((l) => /schedule\[0\]\.cron: /.test(l)), out.join('\n'));
  assert.ok(out.some((l) => /inputs\.topic: input topic has no default/.test(l)), out.join('\n'));
  assert.ok(out.some((l) => /steps\[1\]\.resources\.cpus: expected a number of CPUs, like 1\.5/.test(l)), out.join('\n'));
});

test('keys for jumps and loops from other tools get a pointer; ${{ secrets.X }} says how secrets arrive', () => {
  const text = `version: 1
name: flow
defaults: { image: img }
steps:
  - id: a
    run: echo "\${{ secrets.NPM_TOKEN }}"
    on_failure: goto a
`;
  const out = problems(text).join('\n');
  assert.match(out, /unknown key "on_failure": this format says it with retries: \{ max: N \} \(run again\), or continue_on_error: true \(go on\) \(docs\/pipeline-format.md, "Flow"\)/);
  assert.match(out, /\$\{\{ secrets\.NPM_TOKEN \}\}: secrets are not expressions here; list NPM_TOKEN under the top-level secrets: and the step's secrets:, and it reaches the step as the environment variable NPM_TOKEN \("\$NPM_TOKEN" in run:\)/);
});

test('one bad element does not take its neighbours along: no false "not declared", nothing hidden', () => {
  const text = `version: 1
name: parts
defaults: { image: img }
secrets: [GOOD, bad-name]
inputs:
  topic: { descripton: typo }
  other: { default: x }
schedule:
  - cron: "0 6 * * *"
  - cron: "61 * * * *"
    overlp: skip
steps:
  - id: a
    outputs: [ok, "bad key"]
    secrets: [GOOD]
    run: echo "\${{ inputs.topic }} \${{ inputs.other }}"
  - id: b
    run: echo "\${{ steps.a.outputs.ok }}"
`;
  const out = problems(text).join('\n');
  assert.doesNotMatch(out, /not declared|declares no output ok/, out);
  assert.match(out, /inputs\.topic\.descripton: unknown key/);
  assert.match(out, /secrets\[1\]: expected an environment variable name/);
  assert.match(out, /schedule\[1\]\.overlp: unknown key/);
  assert.match(out, /schedule\[1\]\.cron: /, 'the bad cron beside the typo is reported too');
  assert.match(out, /inputs\.topic: input topic has no default/, 'and the input a schedule needs');
});
