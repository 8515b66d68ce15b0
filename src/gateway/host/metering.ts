/**
 * A step's usage from its gateway's call records: the sum of what the model
 * API reported, whatever the CLI printed. Pure.
 */
import type { AgentUsage } from '../../agents/preset.js';
import type { Spent } from './budget.js';
import type { CallTotals } from './step-gateway.js';

/** The calls' sums; the CLI's own report adds only what calls cannot say (turns, session). */
export function usageFromCalls(t: CallTotals, cli: AgentUsage | undefined, model: string | undefined): AgentUsage {
  return {
    model: t.model ?? model ?? cli?.model ?? null,
    inputTokens: t.inputTokens,
    outputTokens: t.outputTokens,
    cacheReadTokens: t.cacheReadTokens,
    cacheWriteTokens: t.cacheWriteTokens,
    // no call priced (a model on this machine the file's prices: do not name): no cost, rather than a cost of 0
    costUsd: t.unpriced && !t.priced ? null : Math.round(t.costUsd * 1e9) / 1e9,
    turns: cli?.turns ?? null,
    sessionId: cli?.sessionId ?? null,
    calls: t.calls,
    ...(t.unpriced ? { unpriced: true } : {}),
  };
}

/** What a step's usage counts against a budget: all its tokens, its cost. */
export function spentBy(u: AgentUsage | undefined): Spent {
  if (!u) return { usd: 0, tokens: 0 };
  return {
    usd: u.costUsd ?? 0,
    tokens: (u.inputTokens ?? 0) + (u.outputTokens ?? 0) + (u.cacheReadTokens ?? 0) + (u.cacheWriteTokens ?? 0),
  };
}
