import assert from 'node:assert/strict';
import { test } from 'node:test';
import { eventsOf, type AgentEvent } from '../../src/agents/events.js';
import { PRESETS } from '../../src/agents/presets.js';
import { renderAgentEvent } from '../../src/agents/render.js';
import { CLAUDE_CODE_MOVED_AT_TIMEOUT, CODEX_FAILS, OPENCODE_FAILS } from '../fixtures/agent-streams.js';

const lines = (e: AgentEvent) => renderAgentEvent(e);
const result = (r: Partial<Extract<AgentEvent, { kind: 'tool_result' }>>): AgentEvent => ({ agent: 'claude-code', kind: 'tool_result', ok: true, outcome: 'done', lines: 0, bytes: 0, tail: [], ...r });
const log = (preset: string, stream: string[]) => eventsOf(preset, (l) => PRESETS[preset]!.events(l), stream.join('\n')).flatMap(renderAgentEvent);

test('one renderer, whichever CLI: a failed command says its exit and shows its last lines, the same for each', () => {
  const failed = ['  → failed, exit 3, 2 lines, 25 B', '    │ not ok 1 - adds', '    │ # fail 1'];
  assert.deepEqual(log('opencode', OPENCODE_FAILS).slice(1, 5), ['opencode: ran: echo "not ok 1 - adds"; echo "# fail 1" >&2; exit 3', ...failed]);
  assert.deepEqual(log('codex', CODEX_FAILS).slice(3, 7), ['codex: ran: echo "not ok 1 - adds"; echo "# fail 1" >&2; exit 3', '  → failed, exit 3, 2 lines, 25 B', '    │ # fail 1', '    │ not ok 1 - adds']);
});

test('a command moved to the background at its limit is said so, its end later with its exit; the wrap-up is marked', () => {
  assert.deepEqual(log('claude-code', CLAUDE_CODE_MOVED_AT_TIMEOUT), [
    'claude-code: started (claude-opus-5-5)',
    `claude-code: ran: node -e "setTimeout(() => { console.log('ok 1 - adds'); console.log('not ok 2 - slow'); process.exit(5) }, 125000)"`,
    '  → not done after its 120 s limit: moved to the background, task bgu9kr4jz, its end comes later, 0 lines, 0 B',
    'claude-code: The slow tests are running in the background.',
    'claude-code: finished: success, 2 turns',
    'claude-code: background task bgu9kr4jz failed, exit 5: Background command "slow tests" failed with exit code 5',
    "claude-code: wrap-up: a conversation it started itself after its work (a background command ended); not the step's summary",
    'claude-code: (wrap-up) Done.',
    'claude-code: wrap-up finished: success, 1 turn',
  ]);
});

test('each kind of event in lines', () => {
  assert.deepEqual(lines({ agent: 'codex', kind: 'start' }), ['codex: started']);
  assert.deepEqual(lines({ agent: 'claude-code', kind: 'message', text: 'I will add a test.\n\nThen run it.' }), ['claude-code: I will add a test.', 'claude-code: Then run it.']);
  assert.deepEqual(lines({ agent: 'claude-code', kind: 'tool_call', tool: 'write', input: { file_path: '/w/t.js', content: 'x'.repeat(2048) } }), ['claude-code: wrote /w/t.js (2.0 KB)']);
  assert.deepEqual(lines({ agent: 'claude-code', kind: 'tool_call', tool: 'shell', input: { command: 'npm test\n  --silent', run_in_background: true } }), ['claude-code: ran: npm test --silent (in the background)']);
  assert.deepEqual(lines(result({ tool: 'shell', outcome: 'timed_out', ok: false, exitCode: 143, timeoutMs: 1500, lines: 1, bytes: 26, tail: ['Command timed out after 1s'] })), ['  → timed out after 1.5 s: stopped, exit 143, 1 line, 26 B', '    │ Command timed out after 1s']);
  assert.deepEqual(lines(result({ tool: 'shell', outcome: 'backgrounded', task: 'b1', tail: ['ignored'] })), ['  → running in the background, task b1, its end comes later, 0 lines, 0 B']);
  assert.deepEqual(lines(result({ tool: 'shell', exitCode: 0, lines: 1, bytes: 3, tail: ['ok'] })), ['  → ok, 1 line, 3 B', '    │ ok'], 'exit 0 goes without saying');
  assert.deepEqual(lines(result({ tool: 'read', lines: 40, bytes: 1200, tail: ['file body'] })), ['  → ok, 40 lines, 1.2 KB'], "a file read is not shown");
  assert.deepEqual(lines(result({ tool: 'read', ok: false, lines: 1, bytes: 19, tail: ['Error: no such file'] })), ['  → failed, 1 line, 19 B: Error: no such file']);
  assert.deepEqual(lines({ agent: 'codex', kind: 'files', changes: [{ path: 'a.js', change: 'added' }, { path: 'b.js', change: 'edited' }] }), ['codex: wrote a.js, edited b.js']);
  assert.deepEqual(lines({ agent: 'opencode', kind: 'usage', inputTokens: 1 }), []);
  assert.deepEqual(lines({ agent: 'codex', kind: 'final', ok: true, inputTokens: 400, outputTokens: 40 }), ['codex: finished: 400 tokens in, 40 out']);
  assert.deepEqual(lines({ agent: 'claude-code', kind: 'final', ok: false, reason: 'error_max_turns', turns: 40 }), ['claude-code: finished with an error: error_max_turns, 40 turns']);
  assert.deepEqual(lines({ agent: 'claude-code', kind: 'retry', text: 'status 529' }), ['claude-code: the model API failed, retrying (status 529)']);
  assert.deepEqual(lines({ agent: 'codex', kind: 'notice', text: 'no metadata' }), ['codex: warning: no metadata']);
  assert.deepEqual(lines({ agent: 'opencode', kind: 'error', text: 'Overloaded' }), ['opencode: error: Overloaded']);
});

test("a command's output in the log: its last 5 lines that say something, each cut, control characters made visible", () => {
  const tail = ['1', '', '2', '3', '4', '5', '6', `\x1b[2J\r${'y'.repeat(400)}`];
  const out = lines(result({ tool: 'shell', ok: false, exitCode: 1, lines: 7, bytes: 500, tail }));
  assert.equal(out.length, 6);
  assert.deepEqual(out.slice(1, 5), ['    │ 3', '    │ 4', '    │ 5', '    │ 6']);
  assert.match(out[5]!, /^ {4}│ \\x1b\[2J y+…$/, "a carriage return is a space on one line, the escape made visible");
  assert.ok(out[5]!.length < 220, 'cut');
  assert.doesNotMatch(lines({ agent: 'codex', kind: 'message', text: 'evil \u202e\x07 text' }).join(''), /[\u202e\x07]/);
});
