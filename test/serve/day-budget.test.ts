import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunRecord } from '../../src/run/record.js';
import { dayBudget, spentToday } from '../../src/serve/day-budget.js';

const usage = (inputTokens: number, costUsd: number) => ({ model: 'm', inputTokens, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd, turns: null, sessionId: null });
const run = (pipeline: string, startedAt: string, ...steps: Array<ReturnType<typeof usage> | undefined>) =>
  ({ pipeline, startedAt, steps: steps.map((u) => ({ id: 's', ...(u ? { usage: u } : {}) })) }) as unknown as RunRecord;

test("a pipeline's day budget is the tightest of its schedule entries', per unit", () => {
  assert.equal(dayBudget({ schedule: [] }), undefined);
  assert.equal(dayBudget({}), undefined);
  const p = { schedule: [{ budget_per_day: { usd: 40 } }, { budget_per_day: { usd: 10, tokens: 5000 } }, {}] } as never;
  assert.deepEqual(dayBudget(p), { usd: 10, tokens: 5000 });
});

test("the day's spend: this pipeline's runs since midnight UTC, from their records", () => {
  const now = new Date('2026-11-23T08:00:00Z');
  const runs = [
    run('digest', '2026-11-23T06:00:00Z', usage(100, 0.5), usage(50, 0.25), undefined),
    run('digest', '2026-11-23T00:00:00Z', usage(10, 1)),
    run('digest', '2026-11-22T23:59:59Z', usage(1000, 9)),
    run('other', '2026-11-23T07:00:00Z', usage(1000, 9)),
  ];
  assert.deepEqual(spentToday(runs, 'digest', now), { usd: 1.75, tokens: 160 });
});
