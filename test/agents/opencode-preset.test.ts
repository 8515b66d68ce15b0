import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { planSteps } from '../../src/plan/step-plan.js';
import { opencode } from '../../src/agents/opencode.js';
import { OPENCODE_FAILS } from '../fixtures/agent-streams.js';

test('use: opencode: run --format json, its calls home off (update check, model list, LSP downloads, its plugin install), base_url to its provider', () => {
  const [plan] = planSteps(
    parsePipeline(
      `version: 1\nname: p\nsecrets: [ANTHROPIC_API_KEY]\nagents:\n  c: { use: opencode, base_url: "http://gw:8080" }\nsteps:\n  - id: s\n    agent: c\n    prompt: go\n`,
      'p.yaml',
    ),
  );
  assert.equal(plan!.image, 'runner/opencode:latest');
  assert.equal(
    plan!.run,
    `mkdir -p "$HOME/.config/opencode" 2>/dev/null && chmod a-w "$HOME/.config/opencode" || true\n` +
      `opencode run --format json --auto --pure -m 'anthropic/claude-sonnet-4-5' -- "$RUNNER_PROMPT" < /dev/null > /home/agent/.runner/agent-result.json`,
  );
  assert.equal(plan!.env.OPENCODE_DISABLE_AUTOUPDATE, '1');
  assert.equal(plan!.env.OPENCODE_DISABLE_MODELS_FETCH, '1');
  assert.equal(plan!.env.OPENCODE_DISABLE_LSP_DOWNLOAD, '1');
  assert.deepEqual(JSON.parse(plan!.env.OPENCODE_CONFIG_CONTENT!), {
    autoupdate: false,
    share: 'disabled',
    provider: { anthropic: { options: { baseURL: 'http://runner-gateway:3128/v1' } } },
  });
});

test("opencode's stream in one shape (real lines): a call and its result in one event, a failed command's exit, one stopped at its timeout, a failed read", () => {
  const ev = (i: number) => opencode.events(JSON.parse(OPENCODE_FAILS[i]!));
  assert.deepEqual(ev(0), [], 'step_start');
  assert.deepEqual(ev(1), [{ kind: 'message', text: 'I will run the tests.' }]);
  assert.deepEqual(ev(2), [
    { kind: 'tool_call', id: 'toolu_2', tool: 'shell', input: { command: 'echo "not ok 1 - adds"; echo "# fail 1" >&2; exit 3', description: 'run the tests' } },
    { kind: 'tool_result', id: 'toolu_2', tool: 'shell', ok: false, outcome: 'done', exitCode: 3, lines: 2, bytes: 25, tail: ['not ok 1 - adds', '# fail 1'] },
  ], 'its status says completed: the exit code says failed');
  assert.deepEqual(ev(3), [{ kind: 'usage', inputTokens: 100, outputTokens: 10, costUsd: 0.00045 }]);
  const [, stopped] = ev(8);
  assert.deepEqual({ ...stopped, tail: undefined }, { kind: 'tool_result', id: 'toolu_4', tool: 'shell', ok: false, outcome: 'timed_out', timeoutMs: 1000, lines: 4, bytes: 246, tail: undefined });
  assert.deepEqual(ev(11)[1], { kind: 'tool_result', id: 'toolu_5', tool: 'read', ok: false, outcome: 'done', lines: 1, bytes: 50, tail: ['File not found: /home/agent/run-workspace/nope.txt'] });
  assert.deepEqual(ev(15), [{ kind: 'final', ok: true, reason: 'stop', inputTokens: 100, outputTokens: 10, costUsd: 0.00045 }]);
  assert.deepEqual(opencode.events({ type: 'error', error: { name: 'APIError', data: { message: 'Overloaded' } } }), [{ kind: 'error', text: 'Overloaded' }]);
  assert.equal(opencode.parse(OPENCODE_FAILS.join('\n'), {}).result, 'The tests fail: adds is broken.');
});
