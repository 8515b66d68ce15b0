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

/** Midnight UTC of `now`'s day, as an ISO time (records' startedAt compare with it as text). Pure. */
function midnightOf(now: Date): string {
  return new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate())).toISOString();
}

/** What runs of `pipeline` started since midnight UTC spent. Pure. */
export function spentToday(runs: readonly RunRecord[], pipeline: string, now: Date): Spent {
  const midnight = midnightOf(now);
  const out = { usd: 0, tokens: 0 };
  for (const r of runs) {
    if (r.pipeline !== pipeline || r.startedAt < midnight) continue;
    for (const s of r.steps ?? []) {
      const x = spentBy(s.usage);
      out.usd += x.usd;
      out.tokens += x.tokens;
    }
  }
  return out;
}

/**
 * The records of runs started since midnight UTC. Only those asked for since
 * yesterday are read (a run id begins with that day): a run queued before
 * midnight that started after it still counts.
 */
async function todaysRuns(runsRoot: string, now: Date, where: (r: RunRecord) => boolean = () => true): Promise<RunRecord[]> {
  const midnight = midnightOf(now);
  const sinceId = new Date(Date.parse(midnight) - 86_400_000).toISOString().slice(0, 10).replaceAll('-', '');
  return listRuns(runsRoot, { sinceId, where: (r) => r.startedAt >= midnight && where(r) });
}

/** The day's budget and spend for a run about to start, or undefined when the pipeline has no day budget. */
export async function dayOf(runsRoot: string, p: PipelineFile, now: Date): Promise<{ budget: Budget; spent: Spent } | undefined> {
  const budget = dayBudget(p);
  if (!budget) return undefined;
  return { budget, spent: spentToday(await todaysRuns(runsRoot, now, (r) => r.pipeline === p.name), p.name, now) };
}

/** What each pipeline's runs spent since midnight UTC, in US dollars, for the pipelines list. */
export async function spentTodayByPipeline(runsRoot: string, now: Date): Promise<Map<string, number>> {
  const runs = await todaysRuns(runsRoot, now);
  return new Map([...new Set(runs.map((r) => r.pipeline))].map((name) => [name, spentToday(runs, name, now).usd]));
}
