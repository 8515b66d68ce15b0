/** What an agent step cost, in words and summed for metrics. Pure. */
import type { AgentUsage } from './preset.js';

const n = (v: number | null) => (v === null ? '?' : v >= 10_000 ? `${(v / 1000).toFixed(1)}k` : String(v));

/** `claude-x: 3,600 in (200 cached) / 90 out tokens, $0.0123, 3 turns` */
export function describeUsage(u: AgentUsage): string {
  const cached = u.cacheReadTokens ? ` (${n(u.cacheReadTokens)} cached)` : '';
  const cost = u.costUsd !== null ? `, $${u.costUsd.toFixed(4)}${u.unpriced ? ' (some calls unpriced)' : ''}` : u.unpriced ? ', unpriced' : '';
  const calls = u.calls !== undefined ? `, ${u.calls} call${u.calls === 1 ? '' : 's'}` : '';
  const turns = u.turns !== null ? `, ${u.turns} turn${u.turns === 1 ? '' : 's'}` : '';
  return `${u.model ?? 'agent'}: ${n(u.inputTokens)} in${cached} / ${n(u.outputTokens)} out tokens${cost}${turns}${calls}`;
}

/** Tokens and cost by pipeline and agent, over records, for /metrics. */
export function sumUsage(runs: Array<{ pipeline: string; steps: Array<{ usage?: AgentUsage; agent?: string }> }>): Map<string, { pipeline: string; agent: string; input: number; output: number; cost: number }> {
  const out = new Map<string, { pipeline: string; agent: string; input: number; output: number; cost: number }>();
  for (const r of runs) {
    for (const s of r.steps) {
      if (!s.usage) continue;
      const agent = s.agent ?? 'agent';
      const key = `${r.pipeline}\n${agent}`;
      const t = out.get(key) ?? { pipeline: r.pipeline, agent, input: 0, output: 0, cost: 0 };
      t.input += s.usage.inputTokens ?? 0;
      t.output += s.usage.outputTokens ?? 0;
      t.cost += s.usage.costUsd ?? 0;
      out.set(key, t);
    }
  }
  return out;
}
