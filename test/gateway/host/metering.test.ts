import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CallEvent } from '../../../src/gateway/config.js';
import { spentBy, usageFromCalls } from '../../../src/gateway/host/metering.js';
import { addCall, type CallTotals } from '../../../src/gateway/host/step-gateway.js';

const call = (over: Partial<CallEvent>): CallEvent => ({ event: 'call', model: 'm', inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, durationMs: 1, status: 200, ...over });
const totals = (...calls: CallEvent[]): CallTotals => {
  const t: CallTotals = { calls: 0, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, unpriced: false, model: null };
  for (const c of calls) addCall(t, c);
  return t;
};

test('usage is the sum of the calls; turns and session come from the CLI; refused calls are not calls', () => {
  const u = usageFromCalls(
    totals(call({ inputTokens: 100, outputTokens: 10, cacheReadTokens: 5, costUsd: 0.5 }), call({ model: 'm2', inputTokens: 50, outputTokens: 5, cacheWriteTokens: 7, costUsd: 0.25 }), call({ status: 400, refused: 'budget' })),
    { model: 'cli', inputTokens: 1, outputTokens: 1, cacheReadTokens: null, cacheWriteTokens: null, costUsd: 99, turns: 3, sessionId: 's' },
    undefined,
  );
  assert.deepEqual(u, { model: 'm2', inputTokens: 150, outputTokens: 15, cacheReadTokens: 5, cacheWriteTokens: 7, costUsd: 0.75, turns: 3, sessionId: 's', calls: 2 });
  assert.deepEqual(spentBy(u), { usd: 0.75, tokens: 177 });
});

test('an unpriced call is counted in tokens and marks the usage unpriced; no calls is zero, not unknown', () => {
  const u = usageFromCalls(totals(call({ model: 'house', inputTokens: 10, costUsd: null })), undefined, 'house');
  assert.equal(u.unpriced, true);
  // no call priced (a model on this machine): no cost at all, not a cost of 0
  assert.equal(u.costUsd, null);
  const some = usageFromCalls(totals(call({ model: 'house', inputTokens: 10, costUsd: null }), call({ inputTokens: 5, costUsd: 0.25 })), undefined, 'house');
  assert.equal(some.unpriced, true);
  assert.equal(some.costUsd, 0.25);
  assert.equal(u.inputTokens, 10);
  const none = usageFromCalls(totals(), undefined, 'claude-x');
  assert.equal(none.model, 'claude-x');
  assert.equal(none.calls, 0);
  assert.equal(none.inputTokens, 0);
});
