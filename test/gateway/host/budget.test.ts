import assert from 'node:assert/strict';
import { test } from 'node:test';
import { allowance } from '../../../src/gateway/host/budget.js';

test('no budget: no allowance (no limit)', () => {
  assert.equal(allowance({}), undefined);
});

test('the least of step, run left and day left binds, and says which', () => {
  const a = allowance({
    step: { usd: 5, tokens: 2_000_000 },
    run: { budget: { usd: 20 }, spent: { usd: 17, tokens: 0 } },
    day: { budget: { usd: 40, tokens: 1_000_000 }, spent: { usd: 10, tokens: 999_000 } },
  })!;
  assert.equal(a.usd, 3);
  assert.match(a.usdBy!, /the run's budget of \$20/);
  assert.equal(a.tokens, 1000);
  assert.match(a.tokensBy!, /the pipeline's budget of 1000000 tokens per day/);
});

test('spent past a budget leaves nothing, never a negative allowance', () => {
  const a = allowance({ run: { budget: { tokens: 100 }, spent: { usd: 0, tokens: 250 } } })!;
  assert.equal(a.tokens, 0);
  assert.equal(a.usd, undefined);
});
