import assert from 'node:assert/strict';
import { test } from 'node:test';
import { claudeCode } from '../../src/agents/claude-code.js';
import { PipelineError } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { planSteps } from '../../src/plan/step-plan.js';

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

test('use: claude-code plans the image, the headless script, the environment, the network and the key', () => {
  const [plan] = planSteps(parsePipeline(file('    model: claude-sonnet-4-5\n    max_turns: 40\n    base_url: http://gw:8080'), 'p.yaml'));
  assert.equal(plan!.image, 'runner/claude-code:latest', 'the preset image wins over defaults');
  assert.equal(plan!.preset, 'claude-code');
  assert.equal(plan!.run, `claude -p --output-format json --dangerously-skip-permissions --model 'claude-sonnet-4-5' --max-turns 40 -- "$RUNNER_PROMPT" > /home/agent/.runner/agent-result.json`);
  assert.equal(plan!.network, 'bridge');
  assert.deepEqual(plan!.secrets, ['ANTHROPIC_API_KEY'], 'only the credentials it accepts, of those declared');
  assert.equal(plan!.env.ANTHROPIC_BASE_URL, 'http://gw:8080');
  assert.equal(plan!.env.DISABLE_TELEMETRY, '1');
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
