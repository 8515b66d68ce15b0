import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claudeCode } from '../../src/agents/claude-code.js';
import { PipelineError } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { openKeyWarnings, planSteps, secretsNeeded } from '../../src/plan/step-plan.js';

const file = (agent: string, extra = '') => `version: 1
name: p
defaults: { image: runner/base:latest }
secrets: [ANTHROPIC_API_KEY, OTHER]
agents:
  coder:
    use: claude-code
${agent}
steps:
  - id: implement
    agent: coder
    prompt: do it
${extra}`;

test('use: claude-code plans the image, the headless script, the environment, and a gateway that holds the key', () => {
  const [plan] = planSteps(parsePipeline(file('    model: claude-sonnet-4-5\n    max_turns: 40\n    base_url: http://gw:8080\n    secrets: [ANTHROPIC_API_KEY, OTHER]'), 'p.yaml'));
  assert.equal(plan!.image, 'runner/claude-code:latest', 'the preset image wins over defaults');
  assert.equal(plan!.preset, 'claude-code');
  assert.equal(plan!.run, `claude -p --output-format stream-json --verbose --dangerously-skip-permissions --model 'claude-sonnet-4-5' --max-turns 40 -- "$RUNNER_PROMPT" > /home/agent/.runner/agent-result.json`);
  assert.equal(plan!.network, 'gateway');
  assert.deepEqual(plan!.gateway, { egress: [], model: { kind: 'anthropic', upstream: 'http://gw:8080', credential: 'ANTHROPIC_API_KEY' } });
  assert.deepEqual(plan!.secrets, ['OTHER'], 'the key goes to the gateway, the other secret to the container');
  assert.equal(plan!.env.ANTHROPIC_API_KEY, 'runner-gateway-placeholder');
  assert.equal(plan!.env.ANTHROPIC_BASE_URL, 'http://runner-gateway:3128', 'the CLI calls its gateway');
  assert.equal(plan!.env.HTTPS_PROXY, 'http://runner-gateway:3128');
  assert.equal(plan!.env.DISABLE_TELEMETRY, '1');
  assert.deepEqual(secretsNeeded(planSteps(parsePipeline(file(''), 'p.yaml'))), ['ANTHROPIC_API_KEY'], 'checked before the run, though no container gets it');
});

test('network: bridge on the agent: no gateway, the key in the container, the CLI calls its base_url', () => {
  const [plan] = planSteps(parsePipeline(file('    network: bridge\n    base_url: http://gw:8080'), 'p.yaml'));
  assert.equal(plan!.network, 'bridge');
  assert.equal(plan!.gateway, undefined);
  assert.deepEqual(plan!.secrets, ['ANTHROPIC_API_KEY'], 'only the credentials it accepts, of those declared');
  assert.equal(plan!.env.ANTHROPIC_BASE_URL, 'http://gw:8080');
  assert.equal(plan!.env.HTTPS_PROXY, undefined);
  assert.match(openKeyWarnings([plan!])[0]!, /^step implement: its agent holds ANTHROPIC_API_KEY on network bridge, .*drop network: to put the step behind the gateway/);
});

test('egress and budget: hosts beyond the model API, what a step may spend; defaults\' network is for plain steps', () => {
  const [plan] = planSteps(parsePipeline(file('    egress: [registry.npmjs.org, "*.github.com"]\n    budget: { usd: 5, tokens: 2000000 }', '  - id: plain\n    run: "true"\n').replace('defaults: { image: runner/base:latest }', 'defaults: { image: runner/base:latest, network: none }'), 'p.yaml'));
  assert.deepEqual(plan!.gateway, { egress: ['registry.npmjs.org', '*.github.com'], model: { kind: 'anthropic', upstream: 'https://api.anthropic.com', credential: 'ANTHROPIC_API_KEY' }, budget: { usd: 5, tokens: 2000000 } });
  const [, plain] = planSteps(parsePipeline(file('', '  - id: plain\n    run: "true"\n    egress: [example.org]\n'), 'p.yaml'));
  assert.deepEqual(plain!.gateway, { egress: ['example.org'] }, 'a plain step with egress: gets a gateway without a model');
  assert.equal(plain!.env.http_proxy, 'http://runner-gateway:3128');
});

test('every field can be overridden; a command of its own runs instead of the preset', () => {
  const [plan] = planSteps(parsePipeline(file('    image: my/claude:1\n    network: none\n    command: ["claude", "--version"]'), 'p.yaml'));
  assert.equal(plan!.image, 'my/claude:1');
  assert.equal(plan!.network, 'none');
  assert.deepEqual(plan!.command, ['claude', '--version']);
  assert.equal(plan!.preset, undefined, 'no preset result to read');
});

test('refused at load: no prompt, no credential declared, root, an unknown preset', () => {
  const problems = (text: string) => {
    try {
      parsePipeline(text, 'p.yaml');
      return '';
    } catch (err) {
      assert.ok(err instanceof PipelineError);
      return err.message;
    }
  };
  assert.match(problems(file('').replace('    prompt: do it\n', '')), /step "implement" uses agent coder \(claude-code\) and has no prompt/);
  assert.match(problems(file('').replace('secrets: [ANTHROPIC_API_KEY, OTHER]', 'secrets: [OTHER]')), /agent coder uses claude-code, which needs one of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN: declare it/);
  assert.match(problems(file('    user: "0:0"')), /Claude Code refuses to skip its permission prompts as root/);
  assert.match(problems(file('').replace('use: claude-code', 'use: cursor')), /agents\.coder\.use: expected one of claude-code/);
  assert.match(problems(file('    secrets: [OTHER]')), /needs one of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN: .*and list it in the agent's secrets:/, "an agent's own secrets without a key");
  assert.match(problems(file('    model: "${{ inputs.m }}"')), /agents\.coder\.model: expected a model name/);
  assert.match(problems(file('    base_url: "javascript:alert(1)"')), /agents\.coder\.base_url: expected an http or https URL/);
  assert.match(problems(file('    network: bridge\n    egress: [example.org]')), /agents\.coder\.egress: network: and egress: together/);
  assert.match(problems(file('    egress: ["https://github.com"]')), /is not a host name/);
  assert.match(problems(file('    budget: {}')), /expected usd:, tokens: or both/);
});

test("the CLI's JSON result: final message, usage, cost, turns, session; an error said as such", () => {
  const out = claudeCode.parse(
    JSON.stringify({ type: 'result', subtype: 'success', is_error: false, result: 'Done.', num_turns: 3, session_id: 's-1', total_cost_usd: 0.0123, usage: { input_tokens: 10, output_tokens: 5, cache_read_input_tokens: 2, cache_creation_input_tokens: 1 }, modelUsage: { 'claude-x': {} } }),
    {},
  );
  assert.deepEqual(out, { result: 'Done.', usage: { model: 'claude-x', inputTokens: 10, outputTokens: 5, cacheReadTokens: 2, cacheWriteTokens: 1, costUsd: 0.0123, turns: 3, sessionId: 's-1' } });
  assert.match(claudeCode.parse(JSON.stringify({ subtype: 'error_max_turns', is_error: true, num_turns: 40 }), {}).error!, /ended with error_max_turns/);
  assert.equal(claudeCode.parse('not json', {}).error, 'Claude Code wrote no JSON result');
  assert.equal(claudeCode.parse('null', {}).error, 'Claude Code wrote no JSON result', 'valid JSON that is no result does not throw');
  const hostile = claudeCode.parse(JSON.stringify({ usage: { input_tokens: -1e301 }, session_id: { a: 1 }, modelUsage: { ['m'.repeat(5000)]: {} } }), {});
  assert.equal(hostile.usage!.inputTokens, null, 'a negative count is no count');
  assert.equal(hostile.usage!.sessionId, null);
  assert.equal(hostile.usage!.model!.length, 200);
});

test("Claude Code's events read as a person reads them: its messages, each tool call with its path or command, each result in a line", () => {
  const lines = (e: Record<string, unknown>) => claudeCode.renderEvent(e);
  assert.deepEqual(lines({ type: 'system', subtype: 'init', model: 'claude-sonnet-4-5' }), ['claude-code: started (claude-sonnet-4-5)']);
  assert.deepEqual(
    lines({ type: 'assistant', message: { content: [{ type: 'text', text: 'I will add a test.\n\nThen run it.' }, { type: 'tool_use', name: 'Write', input: { file_path: '/w/test.js', content: 'x'.repeat(2048) } }, { type: 'tool_use', name: 'Bash', input: { command: 'npm test\n  --silent' } }] } }),
    ['claude-code: I will add a test.', 'claude-code: Then run it.', 'claude-code: wrote /w/test.js (2.0 KB)', 'claude-code: ran: npm test --silent'],
  );
  assert.deepEqual(lines({ type: 'user', message: { content: [{ type: 'tool_result', content: 'ok 1\nok 2\n', is_error: false }] } }), ['  → ok, 2 lines, 10 B']);
  assert.deepEqual(lines({ type: 'user', message: { content: [{ type: 'tool_result', content: [{ type: 'text', text: 'Error: no such file' }], is_error: true }] } }), ['  → failed, 1 lines, 19 B: Error: no such file']);
  assert.deepEqual(lines({ type: 'result', subtype: 'success', num_turns: 3 }), ['claude-code: finished: success, 3 turns']);
  assert.deepEqual(lines({ type: 'stream_event' }), []);
  assert.equal(claudeCode.parse([JSON.stringify({ type: 'system', subtype: 'init' }), JSON.stringify({ type: 'result', subtype: 'success', result: 'Done.' })].join('\n'), {}).result, 'Done.');
});
