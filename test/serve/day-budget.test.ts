import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { RunRecord } from '../../src/run/record.js';
import { dayBudget, spentToday, spentTodayByPipeline } from '../../src/serve/day-budget.js';

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

test("each pipeline's spend today, for the pipelines list: read from the records of runs asked for since yesterday", async () => {
  const runs = await mkdtemp(path.join(os.tmpdir(), 'runner-day-'));
  try {
    const put = async (id: string, r: RunRecord) => {
      await mkdir(path.join(runs, id));
      await writeFile(path.join(runs, id, 'run.json'), JSON.stringify({ ...r, runId: id }));
    };
    await put('20261123-060000-aaaaaa', run('digest', '2026-11-23T06:00:00Z', usage(100, 0.5), usage(50, 0.25)));
    await put('20261122-235900-bbbbbb', run('digest', '2026-11-23T00:01:00Z', usage(10, 1))); // asked for yesterday, started today
    await put('20261122-100000-cccccc', run('digest', '2026-11-22T10:00:00Z', usage(10, 9)));
    await put('20261123-070000-dddddd', run('other', '2026-11-23T07:00:00Z', undefined));
    // asked for two days ago: never read (its record says today, which it could not)
    await put('20261121-100000-eeeeee', run('digest', '2026-11-23T01:00:00Z', usage(10, 100)));
    const spent = await spentTodayByPipeline(runs, new Date('2026-11-23T08:00:00Z'));
    assert.deepEqual(Object.fromEntries(spent), { digest: 1.75, other: 0 });
  } finally {
    await rm(runs, { recursive: true, force: true });
  }
});
