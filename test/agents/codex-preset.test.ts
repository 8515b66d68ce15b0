import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codex } from '../../src/agents/codex.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { planSteps } from '../../src/plan/step-plan.js';

test('use: codex: exec --json, its sandbox and approvals off (the container is one), the prompt on stdin, analytics off, base_url as a provider', () => {
  const [plan] = planSteps(
    parsePipeline(
      `version: 1\nname: p\nsecrets: [OPENAI_API_KEY]\nagents:\n  c: { use: codex, model: gpt-5-codex, base_url: "http://gw:8080/v1" }\nsteps:\n  - id: s\n    agent: c\n    prompt: go\n`,
      'p.yaml',
    ),
  );
  assert.equal(plan!.image, 'runner/codex:latest');
  assert.deepEqual(plan!.secrets, [], 'the key is its gateway\'s');
  assert.deepEqual(plan!.gateway?.model, { kind: 'openai', upstream: 'http://gw:8080/v1', credential: 'OPENAI_API_KEY' });
  assert.equal(plan!.env.OPENAI_API_KEY, 'runner-gateway-placeholder');
  assert.equal(
    plan!.run,
    `printf '%s' "$RUNNER_PROMPT" | CODEX_API_KEY="\${CODEX_API_KEY:-\$OPENAI_API_KEY}" codex exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox -m 'gpt-5-codex' ` +
      `-c features.plugins=false -c features.apps=false -c features.in_app_updates=false -c analytics.enabled=false -c check_for_update_on_startup=false ` +
      `-c model_provider=runner -c 'model_providers.runner={name="runner",base_url="http://runner-gateway:3128/v1",env_key="OPENAI_API_KEY",wire_api="responses"}' - > /home/agent/.runner/agent-result.json`,
  );
});

test("codex's JSON events: the last agent message, tokens summed over turns, the thread; a failed turn said", () => {
  const events = [
    { type: 'thread.started', thread_id: 't-1' },
    { type: 'item.completed', item: { type: 'agent_message', text: 'first' } },
    { type: 'turn.completed', usage: { input_tokens: 10, cached_input_tokens: 4, output_tokens: 3 } },
    { type: 'item.completed', item: { type: 'agent_message', text: 'Done.' } },
    { type: 'turn.completed', usage: { input_tokens: 5, cached_input_tokens: 0, output_tokens: 2 } },
  ];
  const out = codex.parse(`WARNING: a line that is not an event\n${events.map((e) => JSON.stringify(e)).join('\n')}\n`, { model: 'gpt-5-codex' });
  assert.deepEqual(out, {
    result: 'Done.',
    usage: { model: 'gpt-5-codex', inputTokens: 15, outputTokens: 5, cacheReadTokens: 4, cacheWriteTokens: null, costUsd: null, turns: 2, sessionId: 't-1' },
  });
  assert.match(codex.parse(JSON.stringify({ type: 'turn.failed', error: { message: 'stream disconnected' } }), {}).error!, /stream disconnected/);
  assert.equal(codex.parse('', {}).error, 'Codex wrote no JSON events');
});

test("Codex's events read as a person reads them: commands with their exit, files changed, its messages", () => {
  const lines = (e: Record<string, unknown>) => codex.renderEvent(e);
  assert.deepEqual(lines({ type: 'item.started', item: { type: 'command_execution', command: 'bash -lc ls' } }), ['codex: ran: bash -lc ls']);
  assert.deepEqual(lines({ type: 'item.completed', item: { type: 'command_execution', command: 'false', aggregated_output: 'boom\n', exit_code: 1 } }), ['  → failed, exit 1, 1 lines, 5 B: boom']);
  assert.deepEqual(lines({ type: 'item.completed', item: { type: 'file_change', changes: [{ path: '/w/a.js', kind: 'add' }, { path: '/w/b.js', kind: 'update' }] } }), ['codex: wrote /w/a.js', 'codex: edited /w/b.js']);
  assert.deepEqual(lines({ type: 'item.completed', item: { type: 'agent_message', text: 'Done.' } }), ['codex: Done.']);
  assert.deepEqual(lines({ type: 'turn.completed', usage: { input_tokens: 10, output_tokens: 2 } }), ['codex: turn done (10 tokens in, 2 out)']);
});
