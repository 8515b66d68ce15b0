import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentUsage } from '../../src/agents/preset.js';
import { describeUsage } from '../../src/agents/usage.js';

const usage = (over: Partial<AgentUsage>): AgentUsage => ({ model: 'm', inputTokens: 3600, outputTokens: 90, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0.0123, turns: 3, sessionId: null, ...over });

test('a step\'s usage in words: tokens, cost, turns and calls', () => {
  assert.equal(describeUsage(usage({ calls: 2 })), 'm: 3600 in / 90 out tokens, $0.0123, 3 turns, 2 calls');
  assert.equal(describeUsage(usage({ unpriced: true })), 'm: 3600 in / 90 out tokens, $0.0123 (some calls unpriced), 3 turns');
});

test('no call priced (a model on this machine): said unpriced, never $0', () => {
  assert.equal(describeUsage(usage({ costUsd: null, unpriced: true, turns: null, calls: 4 })), 'm: 3600 in / 90 out tokens, unpriced, 4 calls');
  assert.equal(describeUsage(usage({ costUsd: null, turns: null })), 'm: 3600 in / 90 out tokens');
});
