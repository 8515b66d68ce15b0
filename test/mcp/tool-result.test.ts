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

test('made visible before serialising: the answer stays JSON, and what the client decodes holds no raw control (ESC, CR, BS, BEL, bidi, C1), keys too', () => {
  const hostile = 'a\x1b[31mb\rc\bd\x07e\u202ef\u2066g\x9bh\x85i\u2028j\u2029k\ud800l\udc00m\ttab\nline';
  for (const r of [answer({ line: hostile, [hostile]: [hostile, { deep: hostile }] }), failure(new RunnerError('no_log', hostile))]) {
    const decoded = JSON.parse(text(r)); // a C1 character shown after serialising (\x9b) was not JSON
    const strings: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') strings.push(v);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) (strings.push(k), walk(x));
    };
    walk(decoded);
    assert.ok(strings.some((s) => s.includes('\\x1b[31m')), 'shown, not dropped');
    for (const s of strings) assert.doesNotMatch(s, /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]/, JSON.stringify(s));
    assert.doesNotMatch(text(r), /(?<!\\)\\u(001b|202e|0007|009b|d800|dc00)/, 'no JSON escape that decodes back to a control or half a character');
  }
});
