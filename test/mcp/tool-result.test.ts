import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { DeliveryRefused } from '../../src/delivery/refusal.js';
import { answer, failure, MAX_ANSWER } from '../../src/mcp/tool-result.js';

const text = (r: { content: Array<{ type: string; text?: string }> }) => r.content[0]!.text!;

test('an answer never carries a control character, a bidi override or DEL: they are shown', () => {
  const t = text(answer({ line: 'a\x1b]0;title\x07b\u202ec\x7fd\x9b' }));
  assert.doesNotMatch(t, /[\x00-\x08\x0b-\x1f\x7f-\x9f\u202e]/);
  assert.match(t, /\\u202e/);
  assert.match(t, /\\x7f/);
});

test('an answer is bounded', () => {
  assert.ok(text(answer({ s: 'x'.repeat(MAX_ANSWER * 2) })).length < MAX_ANSWER + 200);
});

test('an error is a tool error with its code and what to do; a refusal carries its details', () => {
  const e = failure(new RunnerError('run_unknown', 'no run x'));
  assert.equal(e.isError, true);
  const body = JSON.parse(text(e));
  assert.equal(body.code, 'run_unknown');
  assert.match(body.error, /^no run x\nWhat to do: list_runs/);
  const r = JSON.parse(text(failure(new DeliveryRefused('verification_failed', 'verify failed', ['verify']))));
  assert.equal(r.code, 'verification_failed');
  assert.deepEqual(r.details, ['verify']);
});
