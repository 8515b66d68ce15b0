import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { renderStep } from '../../src/plan/render.js';
import { BUILTIN_DEFAULTS, planSteps, resolveUser, secretsNeeded } from '../../src/plan/step-plan.js';

const FILE = `version: 1
name: p
defaults: { image: base, resources: { cpus: 1 }, timeout: 5m }
env: { LANG: C.UTF-8, SHARED: top }
secrets: [KEY, OTHER]
agents:
  finn: { image: agent, command: ["claude", "-p", "\${{ prompt }}"], secrets: [KEY], network: bridge, env: { SHARED: agent } }
steps:
  - id: design
    agent: finn
    prompt: do it
    outputs: [topic]
  - id: test
    run: echo "\${{ steps.design.outputs.topic }}"
    resources: { memory: 4g }
    env: { T: "\${{ steps.design.outputs.topic }}!" }
`;

test('settings resolve step, then agent, then defaults, then built-ins', () => {
  const [design, t] = planSteps(parsePipeline(FILE, 'p.yaml'));
  assert.equal(design!.image, 'agent');
  assert.equal(design!.network, 'bridge');
  assert.deepEqual(design!.command, ['claude', '-p', '${{ prompt }}']);
  assert.deepEqual(design!.secrets, ['KEY']);
  assert.equal(design!.env.SHARED, 'agent');
  assert.equal(t!.image, 'base');
  assert.equal(t!.network, 'none');
  assert.equal(t!.memoryBytes, 4 * 1024 ** 3);
  assert.equal(t!.cpus, 1);
  assert.equal(t!.pids, BUILTIN_DEFAULTS.pids);
  assert.equal(t!.timeoutMs, 5 * 60_000);
  assert.deepEqual(t!.secrets, []);
  assert.deepEqual(secretsNeeded([design!, t!]), ['KEY']);
});

test('render: prompt into argv, outputs into env, RUNNER_* identity, secrets only where named', () => {
  const [design, t] = planSteps(parsePipeline(FILE, 'p.yaml'));
  const id = { runId: 'r1', pipeline: 'p', branch: 'run/r1', baseSha: 'abc', attempt: 1, taskRun: 1, taskId: '' };
  const d = renderStep(design!, new Map(), id, { KEY: 'k-value', OTHER: 'o' });
  assert.deepEqual(d.cmd, ['claude', '-p', 'do it']);
  assert.deepEqual(d.secretEnv, { KEY: 'k-value' }, 'a secret is kept apart from the container\'s env');
  assert.equal(d.env.KEY, undefined);
  assert.equal(d.env.OTHER, undefined);
  assert.equal(d.env.RUNNER_PROMPT, 'do it');
  assert.equal(d.env.RUNNER_RUN_ID, 'r1');
  assert.equal(d.env.RUNNER_OUTPUT, '/home/agent/.runner/output');

  const r = renderStep(t!, new Map([['design', { topic: '$(id)' }]]), id, { KEY: 'k-value' });
  assert.deepEqual(r.cmd, ['sh', '-e', '-c', 'echo "${RUNNER_EXPR_0}"']);
  assert.equal(r.env.RUNNER_EXPR_0, '$(id)');
  assert.equal(r.env.T, '$(id)!');
  assert.equal(r.env.KEY, undefined);
  assert.deepEqual(r.secretEnv, {});
  assert.equal(r.env.LANG, 'C.UTF-8');
});

test('render: a secret wins over env: of its name (which then is not in env), the runner\'s own variables win over a secret', () => {
  const [, t] = planSteps(parsePipeline(FILE, 'p.yaml'));
  const id = { runId: 'r1', pipeline: 'p', branch: 'run/r1', baseSha: 'abc', attempt: 1, taskRun: 1, taskId: '' };
  const plan = { ...t!, secrets: ['LANG', 'RUNNER_RUN_ID', 'HOME', 'RUNNER_EXPR_0'] };
  const r = renderStep(plan, new Map(), id, { LANG: 'secret-lang', RUNNER_RUN_ID: 'x', HOME: '/evil', RUNNER_EXPR_0: 'y' });
  assert.deepEqual(r.secretEnv, { LANG: 'secret-lang' });
  assert.equal(r.env.LANG, undefined);
  assert.equal(r.env.RUNNER_RUN_ID, 'r1');
  assert.equal(r.env.HOME, '/home/agent');
  assert.equal(r.env.RUNNER_EXPR_0, '');
});

test('user auto is the project owner, never root unless asked', () => {
  assert.deepEqual(resolveUser('auto', { uid: 1000, gid: 100 }), { uid: 1000, gid: 100 });
  assert.deepEqual(resolveUser('auto', { uid: 0, gid: 0 }), { uid: 65532, gid: 65532 });
  assert.deepEqual(resolveUser('0', { uid: 1000, gid: 100 }), { uid: 0, gid: 0 });
  assert.deepEqual(resolveUser('5:6', { uid: 1000, gid: 100 }), { uid: 5, gid: 6 });
});

test('render: inputs go into the prompt, env and argv, and into scripts only through the environment', () => {
  const [a, b] = planSteps(
    parsePipeline(
      `version: 1
name: p
defaults: { image: base }
inputs: { topic: { default: x } }
steps:
  - id: a
    prompt: "Write about \${{ inputs.topic }}"
    command: ["agent", "\${{ prompt }}", "--topic", "\${{ inputs.topic }}"]
    env: { TOPIC: "\${{ inputs.topic }}" }
  - id: b
    run: echo "\${{ inputs.topic }}"
`,
      'p.yaml',
    ),
  );
  const id = { runId: 'r1', pipeline: 'p', branch: 'run/r1', baseSha: 'abc', attempt: 1, taskRun: 1, taskId: '' };
  const d = renderStep(a!, new Map(), id, {}, { topic: '$(rm -rf /)' });
  assert.deepEqual(d.cmd, ['agent', 'Write about $(rm -rf /)', '--topic', '$(rm -rf /)']);
  assert.equal(d.env.RUNNER_PROMPT, 'Write about $(rm -rf /)');
  assert.equal(d.env.TOPIC, '$(rm -rf /)');
  const s = renderStep(b!, new Map(), id, {}, { topic: '$(rm -rf /)' });
  assert.deepEqual(s.cmd, ['sh', '-e', '-c', 'echo "${RUNNER_EXPR_0}"']);
  assert.equal(s.env.RUNNER_EXPR_0, '$(rm -rf /)');
});

test('render: $${{ … }} is the text ${{ … }} (a prompt or script about GitHub Actions), never an expression', () => {
  const [a] = planSteps(
    parsePipeline(
      `version: 1
name: p
defaults: { image: base }
steps:
  - id: a
    prompt: "add a publish job using $\${{ secrets.NPM_TOKEN }}"
    command: ["agent", "\${{ prompt }}"]
    env: { SHA: "$\${{ github.sha }}" }
  - id: b
    run: echo '$\${{ github.sha }}'
`,
      'p.yaml',
    ),
  );
  const id = { runId: 'r1', pipeline: 'p', branch: 'run/r1', baseSha: 'abc', attempt: 1, taskRun: 1, taskId: '' };
  const d = renderStep(a!, new Map(), id, {});
  assert.deepEqual(d.cmd, ['agent', 'add a publish job using ${{ secrets.NPM_TOKEN }}']);
  assert.equal(d.env.SHA, '${{ github.sha }}');
});

test('isolation: step, then agent, then defaults, then the runner\'s --isolation, then runc', () => {
  const file = `version: 1
name: p
defaults: { image: base }
agents:
  coder: { image: agent, isolation: gvisor, run: "true" }
steps:
  - id: plain
    run: "true"
  - id: agent
    agent: coder
  - id: own
    agent: coder
    isolation: runc
`;
  const ids = (plans: ReturnType<typeof planSteps>) => plans.map((p) => `${p.id}:${p.isolation}`);
  assert.deepEqual(ids(planSteps(parsePipeline(file, 'p.yaml'))), ['plain:runc', 'agent:gvisor', 'own:runc']);
  assert.deepEqual(ids(planSteps(parsePipeline(file, 'p.yaml'), { isolation: 'gvisor' })), ['plain:gvisor', 'agent:gvisor', 'own:runc']);
  const withDefault = file.replace('defaults: { image: base }', 'defaults: { image: base, isolation: runc }');
  assert.deepEqual(ids(planSteps(parsePipeline(withDefault, 'p.yaml'), { isolation: 'gvisor' })), ['plain:runc', 'agent:gvisor', 'own:runc']);
  assert.throws(() => parsePipeline(file.replace('isolation: runc', 'isolation: kata'), 'p.yaml'), /isolation.*expected runc or gvisor/s);
});

test('an approval gate: planned with its prompt, timeout and notify, no gateway; the comment reaches later steps in env and in a prompt as written', () => {
  const plans = planSteps(
    parsePipeline(
      `version: 1
name: g
project: { path: . }
defaults: { image: alpine, egress: [example.com] }
agents: { a: { command: [agent, "\${{ prompt }}"] } }
steps:
  - id: plan
    run: echo plan
  - id: ok
    approval: { prompt: Read PLAN.md, timeout: 48h }
  - id: impl
    agent: a
    prompt: "Do it. The reviewer said: $RUNNER_APPROVAL_COMMENT (\${RUNNER_APPROVAL_COMMENT}) $RUNNER_APPROVAL_COMMENTS"
`,
      'g.yaml',
    ),
  );
  const gate = plans[1]!;
  assert.deepEqual(gate.approval, { prompt: 'Read PLAN.md', timeoutMs: 48 * 3_600_000 });
  assert.equal(gate.gateway, undefined, 'a gate runs nothing: no gateway is made for it');
  const id = { runId: 'r1', pipeline: 'g', branch: 'run/r1', baseSha: 'abc', attempt: 1, taskRun: 1, taskId: '', approvalComment: 'use $(tabs)' };
  const d = renderStep(plans[2]!, new Map(), id, {});
  assert.equal(d.env.RUNNER_APPROVAL_COMMENT, 'use $(tabs)');
  assert.equal(d.env.RUNNER_PROMPT, 'Do it. The reviewer said: use $(tabs) (use $(tabs)) $RUNNER_APPROVAL_COMMENTS', 'a longer name is not the comment');
  const none = renderStep(plans[2]!, new Map(), { ...id, approvalComment: undefined }, {});
  assert.equal(none.env.RUNNER_APPROVAL_COMMENT, undefined, 'no approval: no variable');
});

test("defaults' image: devcontainer is the agents' too; another default image is not", () => {
  const file = (image: string) => `version: 1
name: dc
secrets: [ANTHROPIC_API_KEY]
defaults: { image: ${image} }
agents:
  coder: { use: claude-code }
steps:
  - { id: a, agent: coder, prompt: go }
  - { id: b, run: make }
  - { id: c, agent: coder, prompt: go, image: alpine }
`;
  const dc = planSteps(parsePipeline(file('devcontainer'), 'p.yaml'));
  assert.deepEqual(dc.map((p) => p.image), ['devcontainer', 'devcontainer', 'alpine']);
  assert.equal(dc[0]!.preset, 'claude-code');
  const other = planSteps(parsePipeline(file('node:20'), 'p.yaml'));
  assert.deepEqual(other.map((p) => p.image), ['runner/claude-code:latest', 'node:20', 'alpine']);
});
