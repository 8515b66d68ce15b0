import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EventReader, eventsOf, outputOf, summaryOf, TAIL_LINE_CHARS, TAIL_LINES, toolName, type AgentEvent } from '../../src/agents/events.js';
import { PRESETS } from '../../src/agents/presets.js';
import { CLAUDE_CODE_WRAP_UP, CODEX_FAILS, OPENCODE_FAILS } from '../fixtures/agent-streams.js';

const of = (preset: string, stream: string[]) => eventsOf(preset, (l) => PRESETS[preset]!.events(l), stream.join('\n'));

test("the reader: a result learns its call's tool; lines that are no JSON object are no events; a parser that throws says nothing", () => {
  const events = of('claude-code', CLAUDE_CODE_WRAP_UP);
  assert.ok(events.filter((e) => e.kind === 'tool_result').every((e) => e.kind === 'tool_result' && e.tool === 'shell'));
  assert.ok(events.every((e) => e.agent === 'claude-code'));
  const reader = new EventReader('x', () => {
    throw new Error('mangled');
  });
  assert.deepEqual(reader.line('{"type":"a"}'), []);
  assert.deepEqual(new EventReader('x', () => [{ kind: 'notice', text: 'n' }]).line('not json'), []);
  assert.deepEqual(new EventReader('x', () => [{ kind: 'notice', text: 'n' }]).line('[1]'), []);
});

test('the work and the wrap-up: a start after a final begins the wrap-up; the background command\'s end before it is the work\'s', () => {
  const events = of('claude-code', CLAUDE_CODE_WRAP_UP);
  const kinds = (f: (e: AgentEvent) => boolean) => events.filter(f).map((e) => e.kind);
  assert.deepEqual(kinds((e) => !e.wrapUp), ['start', 'tool_call', 'tool_result', 'tool_call', 'tool_result', 'message', 'final', 'task_end']);
  assert.deepEqual(kinds((e) => e.wrapUp === true), ['start', 'message', 'final']);
  assert.deepEqual(of('codex', CODEX_FAILS).filter((e) => e.wrapUp), [], 'Codex starts none');
  assert.deepEqual(of('opencode', OPENCODE_FAILS).filter((e) => e.wrapUp), [], 'opencode starts none');
});

test("the summary: the work's answer, else the work's last message; never a wrap-up's", () => {
  const e = (x: Record<string, unknown>): AgentEvent => ({ agent: 'a', ...x }) as AgentEvent;
  assert.equal(summaryOf(of('claude-code', CLAUDE_CODE_WRAP_UP)), 'Ran the tests; the work is done.');
  assert.equal(summaryOf(of('codex', CODEX_FAILS)), 'The tests fail: adds is broken.');
  assert.equal(summaryOf([e({ kind: 'message', text: 'first' }), e({ kind: 'final', ok: true }), e({ kind: 'message', text: 'second' }), e({ kind: 'final', ok: true })]), 'second', 'two turns of one conversation (no start between): the last message');
  assert.equal(summaryOf([e({ kind: 'message', text: 'said' }), e({ kind: 'final', ok: true, result: 'answered' })]), 'answered');
  assert.equal(summaryOf([e({ kind: 'message', text: 'said' }), e({ kind: 'final', ok: false, reason: 'error_max_turns' })]), 'said', 'an answer-less end: its last message');
  assert.equal(summaryOf([e({ kind: 'message', text: 'Working on it' })]), 'Working on it', 'cut short (a timeout): its last message');
  assert.equal(summaryOf([e({ kind: 'final', ok: true }), e({ kind: 'start', wrapUp: true }), e({ kind: 'message', text: 'Done.', wrapUp: true })]), undefined);
  assert.equal(summaryOf([]), undefined);
});

test("a command's output as an event carries it: its size, its last lines, each cut", () => {
  const many = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n');
  const out = outputOf(`${many}\n${'z'.repeat(1000)}\n\n`);
  assert.equal(out.lines, 51);
  assert.equal(out.tail.length, TAIL_LINES);
  assert.equal(out.tail.at(-1)!.length, TAIL_LINE_CHARS);
  assert.equal(out.tail[0], 'line 31');
  assert.deepEqual(outputOf(''), { lines: 0, bytes: 0, tail: [] });
  assert.deepEqual(outputOf('a\r\nb\r\n').tail, ['a', 'b']);
  assert.deepEqual(['Bash', 'shell', 'exec_command', 'bash', 'Write', 42].map(toolName), ['shell', 'shell', 'shell', 'shell', 'Write', 'tool']);
});
