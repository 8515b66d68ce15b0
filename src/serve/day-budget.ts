/**
 * A pipeline's budget per day under runner serve: the smallest
 * `budget_per_day` of its schedule entries, against what its runs spent since
 * midnight UTC, read from their records (so a restart loses nothing).
 */
import type { Budget, Spent } from '../gateway/host/budget.js';
import { spentBy } from '../gateway/host/metering.js';
import type { PipelineFile } from '../pipeline/schema.js';
import { listRuns } from '../run/records.js';
import type { RunRecord } from '../run/record.js';

/** The tightest of the entries' day budgets, per unit; undefined when none sets one. */
export function dayBudget(p: Pick<PipelineFile, 'schedule'>): Budget | undefined {
  const all = (p.schedule ?? []).map((e) => e.budget_per_day).filter((b) => b !== undefined);
  if (!all.length) return undefined;
  const least = (k: 'usd' | 'tokens') => {
    const v = all.map((b) => b[k]).filter((x): x is number => x !== undefined);
    return v.length ? Math.min(...v) : undefined;
  };
  const usd = least('usd');
  const tokens = least('tokens');
  return { ...(usd !== undefined ? { usd } : {}), ...(tokens !== undefined ? { tokens } : {}) };
}

/** What runs of `pipeline` started since midnight UTC spent. Pure. */
export function spentToday(runs: readonly RunRecord[], pipeline: string, now: Date): Spent {
  const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
  const out = { usd: 0, tokens: 0 };
  for (const r of runs) {
    if (r.pipeline !== pipeline || r.startedAt < midnight) continue;
    for (const s of r.steps) {
      const x = spentBy(s.usage);
      out.usd += x.usd;
      out.tokens += x.tokens;
    }
  }
  return out;
}

/** The day's budget and spend for a run about to start, or undefined when the pipeline has no day budget. */
export async function dayOf(runsRoot: string, p: PipelineFile, now: Date): Promise<{ budget: Budget; spent: Spent } | undefined> {
  const budget = dayBudget(p);
  if (!budget) return undefined;
  const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
  const runs = await listRuns(runsRoot, { where: (r) => r.pipeline === p.name && r.startedAt >= midnight });
  return { budget, spent: spentToday(runs, p.name, now) };
}

/**
 * What each pipeline's runs spent since midnight UTC, in US dollars, for the
 * pipelines list. Only the records of runs asked for since yesterday are read
 * (a run id begins with that day): a run queued before midnight that started
 * after it still counts.
 */
export async function spentTodayByPipeline(runsRoot: string, now: Date): Promise<Map<string, number>> {
  const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const yesterday = new Date(midnight - 86_400_000);
  const sinceId = yesterday.toISOString().slice(0, 10).replaceAll('-', '');
  const since = new Date(midnight).toISOString();
  const out = new Map<string, number>();
  for (const r of await listRuns(runsRoot, { sinceId, where: (r) => r.startedAt >= since })) {
    let usd = 0;
    for (const s of r.steps ?? []) usd += spentBy(s.usage).usd;
    out.set(r.pipeline, (out.get(r.pipeline) ?? 0) + usd);
  }
  return out;
}
