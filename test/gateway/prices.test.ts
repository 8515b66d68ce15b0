import assert from 'node:assert/strict';
import { test } from 'node:test';
import { costOf, DEFAULT_PRICES, priceFor, type CallTokens, type Price } from '../../src/gateway/prices.js';

const tokens = (inputTokens: number, outputTokens: number, cacheReadTokens = 0, cacheWriteTokens = 0): CallTokens => ({
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens,
});

test('the default table has the published prices', () => {
  assert.deepEqual(DEFAULT_PRICES['claude-opus-4-5'], { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 });
  assert.deepEqual(DEFAULT_PRICES['claude-sonnet-4-5'], { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });
  assert.deepEqual(DEFAULT_PRICES['claude-haiku-4-5'], { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 });
  assert.deepEqual(DEFAULT_PRICES['claude-opus-4-1'], { input: 15, output: 75, cache_read: 1.5, cache_write: 18.75 });
  assert.deepEqual(DEFAULT_PRICES['claude-sonnet-4'], { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 });
  assert.deepEqual(DEFAULT_PRICES['gpt-5'], { input: 1.25, output: 10, cache_read: 0.125 });
  assert.deepEqual(DEFAULT_PRICES['gpt-5-mini'], { input: 0.25, output: 2, cache_read: 0.025 });
  assert.deepEqual(DEFAULT_PRICES['gpt-5-codex'], { input: 1.25, output: 10, cache_read: 0.125 });
  assert.deepEqual(DEFAULT_PRICES['gpt-4.1'], { input: 2, output: 8, cache_read: 0.5 });
  assert.deepEqual(DEFAULT_PRICES['o4-mini'], { input: 1.1, output: 4.4, cache_read: 0.275 });
  // Claude Code 2.1's default model, priced as its own model catalog prices it
  assert.deepEqual(DEFAULT_PRICES['claude-opus-5-5'], { input: 4, output: 20, cache_read: 0.2, cache_write: 5 });
  for (const [model, p] of Object.entries(DEFAULT_PRICES)) assert.ok(p.input > 0 && p.output >= p.input, model);
});

test('a model is found by exact name, then without its date, then without a provider prefix', () => {
  const t = DEFAULT_PRICES;
  assert.equal(priceFor('claude-sonnet-4-5', t), t['claude-sonnet-4-5']);
  assert.equal(priceFor('claude-sonnet-4-5-20250929', t), t['claude-sonnet-4-5']);
  assert.equal(priceFor('claude-sonnet-4-20250514', t), t['claude-sonnet-4']);
  assert.equal(priceFor('gpt-5-2025-08-07', t), t['gpt-5']);
  assert.equal(priceFor('gpt-5-mini-2025-08-07', t), t['gpt-5-mini']);
  assert.equal(priceFor('anthropic/claude-sonnet-4-5', t), t['claude-sonnet-4-5']);
  assert.equal(priceFor('openai/gpt-5', t), t['gpt-5']);
  assert.equal(priceFor('anthropic/claude-haiku-4-5-20251001', t), t['claude-haiku-4-5']);
  assert.equal(priceFor('claude-opus-4-5@20251101', t), t['claude-opus-4-5']);
});

test('an exact key wins over a shortened one', () => {
  const dated: Price = { input: 9, output: 9 };
  const t = { ...DEFAULT_PRICES, 'gpt-5-2025-08-07': dated };
  assert.equal(priceFor('gpt-5-2025-08-07', t), dated);
});

test('unknown models, null and Object members are unpriced', () => {
  for (const m of [null, 'claude-9', 'gpt-5-nano', 'constructor', '__proto__', 'toString', 'hasOwnProperty', 'x/constructor', '', 'gpt', 'claude-sonnet-4-5-2025']) {
    assert.equal(priceFor(m, DEFAULT_PRICES), undefined, String(m));
  }
});

test('the cost counts every kind of token at its price', () => {
  const p = DEFAULT_PRICES['claude-sonnet-4-5'];
  assert.equal(costOf(tokens(1_000_000, 0), p), 3);
  assert.equal(costOf(tokens(0, 1_000_000), p), 15);
  assert.equal(costOf(tokens(0, 0, 1_000_000), p), 0.3);
  assert.equal(costOf(tokens(0, 0, 0, 1_000_000), p), 3.75);
  assert.equal(costOf(tokens(1200, 350, 40_000, 2000), p), 0.02835);
  assert.equal(costOf(tokens(0, 0), p), 0);
});

test('cache prices default to 0.1 and 1.25 times the input price', () => {
  const p: Price = { input: 2, output: 8 };
  assert.equal(costOf(tokens(0, 0, 1_000_000), p), 0.2);
  assert.equal(costOf(tokens(0, 0, 0, 1_000_000), p), 2.5);
});

test('the cost is rounded to 1e-9 USD, and null when unpriced', () => {
  assert.equal(costOf(tokens(1, 1), DEFAULT_PRICES['gpt-5-mini']), 0.00000225);
  assert.equal(costOf(tokens(1, 0), { input: 0.0001, output: 0 }), 0);
  assert.equal(costOf(tokens(3, 0), { input: 1 / 3, output: 0 }), 0.000001);
  assert.equal(costOf(tokens(1, 1), undefined), null);
  assert.equal(costOf(tokens(5, 5), priceFor('unknown-model', DEFAULT_PRICES)), null);
});
