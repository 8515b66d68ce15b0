import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunSpend } from '../../../src/gateway/host/run-spend.js';

test('steps running at once are stopped when their calls together spend the run budget', () => {
  const s = new RunSpend({ usd: 1 }, undefined);
  const stopped: string[] = [];
  const a = s.watch((why) => stopped.push(`a: ${why}`));
  s.watch((why) => stopped.push(`b: ${why}`));
  s.add(100, 0.6);
  assert.deepEqual(stopped, []);
  a();
  s.add(100, 0.5);
  assert.deepEqual(stopped, ["b: the run's budget of $1 is spent"]);
});

test("the day's budget counts what earlier runs spent today", () => {
  const s = new RunSpend(undefined, { budget: { tokens: 1000 }, spent: { usd: 0, tokens: 900 } });
  assert.equal(s.over(), undefined);
  s.add(100, 0);
  assert.equal(s.over(), "the pipeline's budget of 1000 tokens per day is spent");
  assert.deepEqual(s.daySpent(), { usd: 0, tokens: 1000 });
});
