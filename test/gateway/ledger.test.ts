import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Ledger } from '../../src/gateway/ledger.js';

test('a call goes until the allowance is spent; the one that crosses it is let through', () => {
  const l = new Ledger({ tokens: 1000, tokensBy: "the agent's budget of 1000 tokens per step" });
  assert.equal(l.refusal(), undefined);
  l.add(900, null);
  assert.equal(l.refusal(), undefined);
  l.add(300, null);
  assert.match(l.refusal()!, /^budget exhausted: 1200 tokens spent, the agent's budget of 1000 tokens per step allows 1000 more/);
});

test('a USD allowance counts priced calls; no allowance never refuses', () => {
  const l = new Ledger({ usd: 0.5 });
  l.add(10, 0.25);
  assert.equal(l.refusal(), undefined);
  l.add(10, 0.25);
  assert.match(l.refusal()!, /\$0\.5000 spent/);
  const free = new Ledger(undefined);
  free.add(1e9, 1e6);
  assert.equal(free.refusal(), undefined);
});
