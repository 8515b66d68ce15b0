import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classify, describeStatus } from '../../src/run/step-result.js';

test('the first cause decides the status', () => {
  const cases: Array<[Parameters<typeof classify>, string]> = [
    [['exit', 0, false], 'completed'],
    [['exit', 2, false], 'failed'],
    [['exit', 137, true], 'oom'],
    [['timeout', 137, false], 'timed_out'],
    [['timeout', 137, true], 'timed_out'],
    [['canceled', 143, false], 'canceled'],
  ];
  for (const [args, want] of cases) assert.equal(classify(...args), want, JSON.stringify(args));
  assert.equal(describeStatus('failed', 2), 'failed (exit 2)');
  assert.equal(describeStatus('timed_out', 137), 'timed out');
});
