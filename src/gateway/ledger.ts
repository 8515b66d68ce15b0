/**
 * What a step has spent through its gateway, against what it may still spend.
 * Pure. A call is refused once the allowance is used up; the call that crosses
 * it is let through (its cost is known only once it has answered).
 */
import type { Allowance } from './config.js';

export interface Spend {
  usd: number;
  tokens: number;
}

export class Ledger {
  readonly spent: Spend = { usd: 0, tokens: 0 };

  constructor(private readonly allowance: Allowance | undefined) {}

  /** whether any allowance binds (then calls go one at a time) */
  get limited(): boolean {
    return this.allowance !== undefined && (this.allowance.usd !== undefined || this.allowance.tokens !== undefined);
  }

  /** whether a USD allowance binds (then an unpriced call is charged at the dearest price known) */
  get limitedUsd(): boolean {
    return this.allowance?.usd !== undefined;
  }

  add(tokens: number, usd: number | null): void {
    this.spent.tokens += tokens;
    this.spent.usd += usd ?? 0;
  }

  /** Why the next call may not go, in words; undefined when it may. */
  refusal(): string | undefined {
    const a = this.allowance;
    if (!a) return undefined;
    if (a.tokens !== undefined && this.spent.tokens >= a.tokens) {
      return `budget exhausted: ${this.spent.tokens} tokens spent, ${a.tokensBy ?? 'the budget'} allows ${a.tokens} more for this step`;
    }
    if (a.usd !== undefined && this.spent.usd >= a.usd) {
      return `budget exhausted: $${this.spent.usd.toFixed(4)} spent, ${a.usdBy ?? 'the budget'} allows $${a.usd.toFixed(4)} more for this step`;
    }
    return undefined;
  }
}
