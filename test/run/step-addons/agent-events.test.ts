import assert from 'node:assert/strict';
import { test } from 'node:test';
import { agentReport } from '../../../src/run/step-addons/agent-events.js';

test("an agent's result: its final message as the step's result, its usage, its problems", () => {
  const usage = { model: 'm', inputTokens: 1, outputTokens: 2, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: null, turns: 4, sessionId: 's' };
  assert.deepEqual(agentReport({ result: 'Done: 3 files', usage }), { usage, outputs: { result: 'Done: 3 files' } });
  assert.deepEqual(agentReport({ result: '', error: 'max turns reached' }), { outputs: { result: '' }, problems: ['max turns reached'] });
  assert.deepEqual(agentReport({ problem: 'claude-code wrote no result (it did not finish)' }), { problems: ['claude-code wrote no result (it did not finish)'] });
});
