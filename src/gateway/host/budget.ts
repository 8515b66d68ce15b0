/**
 * What a step may still spend on model calls, from the three budgets that
 * bind it (its agent's per step, its run's, its pipeline's day) and what the
 * run and the day have spent before it. Pure.
 */
import type { Allowance } from '../config.js';

export interface Budget {
  usd?: number | undefined;
  tokens?: number | undefined;
}

export interface Spent {
  usd: number;
  tokens: number;
}

export interface Budgets {
  step?: Budget | undefined;
  run?: { budget: Budget; spent: Spent } | undefined;
  day?: { budget: Budget; spent: Spent } | undefined;
}

/** The smallest of what each budget leaves, and which one that is; undefined when none binds. */
export function allowance(b: Budgets): Allowance | undefined {
  const out: Allowance = {};
  const consider = (limit: number | undefined, spent: number, by: string, unit: 'usd' | 'tokens') => {
    if (limit === undefined) return;
    const left = Math.max(0, limit - spent);
    if (out[unit] === undefined || left < out[unit]!) {
      out[unit] = left;
      if (unit === 'usd') out.usdBy = by;
      else out.tokensBy = by;
    }
  };
  consider(b.step?.usd, 0, `the agent's budget of $${b.step?.usd} per step`, 'usd');
  consider(b.step?.tokens, 0, `the agent's budget of ${b.step?.tokens} tokens per step`, 'tokens');
  consider(b.run?.budget.usd, b.run?.spent.usd ?? 0, `the run's budget of $${b.run?.budget.usd}`, 'usd');
  consider(b.run?.budget.tokens, b.run?.spent.tokens ?? 0, `the run's budget of ${b.run?.budget.tokens} tokens`, 'tokens');
  consider(b.day?.budget.usd, b.day?.spent.usd ?? 0, `the pipeline's budget of $${b.day?.budget.usd} per day`, 'usd');
  consider(b.day?.budget.tokens, b.day?.spent.tokens ?? 0, `the pipeline's budget of ${b.day?.budget.tokens} tokens per day`, 'tokens');
  return out.usd === undefined && out.tokens === undefined ? undefined : out;
}
