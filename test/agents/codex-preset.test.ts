import assert from 'node:assert/strict';
import { test } from 'node:test';
import { codex, unwrapShell } from '../../src/agents/codex.js';
import { CODEX_FAILS, CODEX_LONG_COMMAND } from '../fixtures/agent-streams.js';
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

test("Codex's stream in one shape (real lines): commands with their exit and output, its messages, its warnings, the turn's end", () => {
  const ev = (i: number) => codex.events(JSON.parse(CODEX_FAILS[i]!));
  assert.deepEqual(ev(0), [{ kind: 'start', session: '01a2194c-58ab-7ae0-9466-3f74f0dffe97' }]);
  assert.deepEqual(ev(1), [{ kind: 'notice', text: 'Model metadata for `gpt-5-codex` not found. Defaulting to fallback metadata; this can degrade performance and cause issues.' }], 'an error item is a warning: Codex goes on');
  assert.deepEqual(ev(2), [], 'turn.started');
  assert.deepEqual(ev(3), [{ kind: 'message', text: 'I will run the tests.' }]);
  assert.deepEqual(ev(4), [{ kind: 'tool_call', id: 'item_2', tool: 'shell', input: { command: 'echo "not ok 1 - adds"; echo "# fail 1" >&2; exit 3' } }], 'the command the agent gave, not its shell around it');
  assert.deepEqual(ev(5), [{ kind: 'tool_result', id: 'item_2', tool: 'shell', ok: false, outcome: 'done', exitCode: 3, lines: 2, bytes: 25, tail: ['# fail 1', 'not ok 1 - adds'] }]);
  assert.deepEqual(ev(7), [{ kind: 'tool_result', id: 'item_3', tool: 'shell', ok: true, outcome: 'done', exitCode: 0, lines: 1, bytes: 6, tail: ['wrote'] }]);
  assert.deepEqual(ev(11), [{ kind: 'final', ok: true, inputTokens: 400, outputTokens: 40 }]);
  // a command that outlives its yield is one item, completed when it ended
  const long = CODEX_LONG_COMMAND.flatMap((l) => codex.events(JSON.parse(l))).filter((e) => e.kind === 'tool_result');
  assert.deepEqual(long, [{ kind: 'tool_result', id: 'item_1', tool: 'shell', ok: false, outcome: 'done', exitCode: 5, lines: 1, bytes: 16, tail: ['not ok 2 - slow'] }]);
  assert.deepEqual(codex.events({ type: 'item.completed', item: { type: 'file_change', changes: [{ path: '/w/a.js', kind: 'add' }, { path: '/w/b.js', kind: 'update' }, { kind: 'add' }] } }), [{ kind: 'files', changes: [{ path: '/w/a.js', change: 'added' }, { path: '/w/b.js', change: 'edited' }] }]);
  assert.deepEqual(codex.events({ type: 'turn.failed', error: { message: 'stream disconnected' } }), [{ kind: 'final', ok: false, reason: 'stream disconnected' }]);
  assert.deepEqual(codex.events({ type: 'error', message: 'Reconnecting... 1/5' }), [{ kind: 'retry', text: 'Reconnecting... 1/5' }]);
});

test("Codex's shell around a command is taken off; a command that is not so wrapped stays as it is", () => {
  assert.equal(unwrapShell(`/usr/bin/bash -lc 'echo '\\''hi'\\'' > a'`), "echo 'hi' > a");
  assert.equal(unwrapShell('/usr/bin/bash -lc "printf \'hello\\\\n\' > hello.txt && echo \\"wrote\\""'), "printf 'hello\\n' > hello.txt && echo \"wrote\"");
  assert.equal(unwrapShell('ls -la'), 'ls -la');
  assert.equal(unwrapShell(['bash', '-lc', 'ls']), 'bash -lc ls');
});
