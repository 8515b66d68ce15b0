import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claudeCode } from '../../src/agents/claude-code.js';
import { eventsOf, summaryOf } from '../../src/agents/events.js';
import { PipelineError } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { openKeyWarnings, planSteps, secretsNeeded } from '../../src/plan/step-plan.js';
import { CLAUDE_CODE_FAILS_AND_BACKGROUNDS, CLAUDE_CODE_MOVED_AT_TIMEOUT, CLAUDE_CODE_WRAP_UP } from '../fixtures/agent-streams.js';

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

test("Claude Code's stream in one shape (real lines): a failed command with its exit and output, one in the background and its end, one stopped at its timeout", () => {
  const ev = (i: number) => claudeCode.events(JSON.parse(CLAUDE_CODE_FAILS_AND_BACKGROUNDS[i]!));
  const session = '481fc7c0-b8fe-47ab-8091-06752b2e3b5c';
  assert.deepEqual(ev(0), [{ kind: 'start', model: 'claude-opus-5-5', session }]);
  assert.deepEqual(ev(1), [{ kind: 'message', text: 'I will run the tests.' }]);
  assert.deepEqual(ev(2), [{ kind: 'tool_call', id: 'toolu_1', tool: 'shell', input: { command: 'echo "not ok 1 - adds"; echo "# fail 1" >&2; exit 3', description: 'run the failing tests' } }]);
  assert.deepEqual(ev(3), [{ kind: 'tool_result', id: 'toolu_1', ok: false, outcome: 'done', exitCode: 3, lines: 2, bytes: 24, tail: ['not ok 1 - adds', '# fail 1'] }], 'its exit and its output, not "Exit code 3"');
  assert.deepEqual(ev(7), [{ kind: 'tool_result', id: 'toolu_2', ok: true, outcome: 'backgrounded', task: 'bb46czigm', lines: 0, bytes: 0, tail: [] }], 'its note on the background is no output');
  assert.deepEqual(ev(9), [{ kind: 'tool_result', id: 'toolu_3', ok: false, outcome: 'timed_out', exitCode: 143, timeoutMs: 1000, lines: 1, bytes: 26, tail: ['Command timed out after 1s'] }]);
  assert.deepEqual(ev(12), [{ kind: 'task_end', task: 'bb46czigm', id: 'toolu_2', ok: false, exitCode: 4, text: 'Background command "long job" failed with exit code 4' }]);
  assert.deepEqual(ev(16), [{ kind: 'tool_result', id: 'toolu_4', ok: true, outcome: 'done', lines: 0, bytes: 0, tail: [] }]);
  assert.deepEqual(ev(18), [{ kind: 'final', ok: true, reason: 'success', result: 'The tests fail: adds is broken.', turns: 5, inputTokens: 500, outputTokens: 50, costUsd: 0.003 }]);
  // the tasks' bookkeeping, and the task of a long foreground command (its result follows), say nothing a person needs
  for (const i of [5, 6, 11, 13, 14, 15]) assert.deepEqual(ev(i), [], CLAUDE_CODE_FAILS_AND_BACKGROUNDS[i]);
});

test('Claude Code moves a command to the background at its 120 s limit: said so; its failure after the answer is its end; the wrap-up is marked and not the summary', () => {
  const events = eventsOf('claude-code', (l) => claudeCode.events(l), CLAUDE_CODE_MOVED_AT_TIMEOUT.join('\n'));
  assert.deepEqual(events.filter((e) => e.kind === 'tool_result'), [{ agent: 'claude-code', kind: 'tool_result', id: 'toolu_1', tool: 'shell', ok: true, outcome: 'backgrounded', timeoutMs: 120000, task: 'bgu9kr4jz', lines: 0, bytes: 0, tail: [] }]);
  assert.deepEqual(events.filter((e) => e.kind === 'task_end'), [{ agent: 'claude-code', kind: 'task_end', task: 'bgu9kr4jz', id: 'toolu_1', ok: false, exitCode: 5, text: 'Background command "slow tests" failed with exit code 5' }], 'the end is the work\'s');
  assert.deepEqual(events.filter((e) => e.wrapUp).map((e) => e.kind), ['start', 'message', 'final'], 'the second conversation is the wrap-up');
  assert.equal(summaryOf(events), 'The slow tests are running in the background.', 'not the wrap-up\'s "Done."');
  const out = claudeCode.parse(CLAUDE_CODE_WRAP_UP.join('\n'), {});
  assert.equal(out.result, 'Ran the tests; the work is done.');
  assert.equal(out.error, undefined);
  assert.deepEqual(out.usage, { model: 'claude-opus-5-5', inputTokens: 400, outputTokens: 40, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.0024000000000000002, turns: 4, sessionId: 'cb924f8b-aa9a-4a4e-8ae4-bf3793d3fe4b' }, 'tokens and turns of both conversations; the cost is the session\'s, said last');
});

test("Claude Code's lines that are no event of its own, or mangled, say nothing", () => {
  assert.deepEqual(claudeCode.events({ type: 'stream_event' }), []);
  assert.deepEqual(claudeCode.events({ type: 'user', message: { content: 'plain' } }), []);
  assert.deepEqual(claudeCode.events({ type: 'assistant', message: { content: [{ type: 'tool_use', name: { x: 1 }, input: 'no' }] } }), [{ kind: 'tool_call', tool: 'tool', input: {} }]);
  assert.deepEqual(claudeCode.events({ type: 'system', subtype: 'api_retry', error_status: 529, error: 'overloaded_error' }), [{ kind: 'retry', text: 'status 529: overloaded_error' }]);
  assert.equal(claudeCode.parse([JSON.stringify({ type: 'system', subtype: 'init' }), JSON.stringify({ type: 'result', subtype: 'success', result: 'Done.' })].join('\n'), {}).result, 'Done.');
});
