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
