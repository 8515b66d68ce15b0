import assert from 'node:assert/strict';
import { Readable } from 'node:stream';
import { test } from 'node:test';
import { MAX_SHOWN, presetOfLine, shownEvent, transcriptEvents } from '../../src/agents/transcript.js';
import { CLAUDE_CODE_WRAP_UP, CODEX_FAILS, OPENCODE_FAILS } from '../fixtures/agent-streams.js';

const all = async (text: string) => {
  const out = [];
  for await (const e of transcriptEvents(Readable.from([text]))) out.push(e);
  return out;
};

test('a transcript is read in the one shape, its CLI known by its lines', async () => {
  assert.deepEqual([CLAUDE_CODE_WRAP_UP, CODEX_FAILS, OPENCODE_FAILS].map((s) => presetOfLine(JSON.parse(s[0]!))), ['claude-code', 'codex', 'opencode']);
  assert.equal(presetOfLine({ type: 'whatever' }), undefined);
  for (const [stream, agent] of [[CLAUDE_CODE_WRAP_UP, 'claude-code'], [CODEX_FAILS, 'codex'], [OPENCODE_FAILS, 'opencode']] as const) {
    const events = await all(`a warning the CLI printed\n${stream.join('\n')}\n`);
    assert.ok(events.length > 5 && events.every((e) => e.agent === agent), agent);
    assert.ok(events.some((e) => e.kind === 'tool_result' && !e.ok && e.tool === 'shell'), `${agent}: its failed command`);
  }
  assert.deepEqual(await all('no\nevents\n'), []);
});

test('an event as a door gives it: control characters visible, newlines kept, long strings cut', () => {
  const e = shownEvent({ agent: 'claude-code', kind: 'tool_call', tool: 'write', input: { content: `a\nb\x1b[31m${'x'.repeat(MAX_SHOWN + 10)}`, ['k\u202e']: 1 } });
  assert.ok(e.kind === 'tool_call');
  const content = e.input.content as string;
  assert.match(content, /^a\nb\\x1b\[31mx+… \(18 more characters\)$/);
  assert.ok(Object.keys(e.input).includes('k\\u202e'));
  const decoded = JSON.stringify(JSON.parse(JSON.stringify(e)), (_k, v: unknown) => v);
  assert.doesNotMatch(JSON.stringify(JSON.parse(decoded)), /[\x1b\u202e]/, 'what the JSON decodes back to holds no control character');
  assert.doesNotMatch(Object.keys(JSON.parse(decoded).input).join('') + content, /[\x1b\u202e]/);
});
