/**
 * What a run's model calls have spent, as its gateways report each call, and
 * whether the run's or the pipeline's day budget is spent: then every gated
 * step still running is stopped (steps running at once would otherwise each
 * spend what the run had left when they started).
 */
import type { Budget, Spent } from './budget.js';

export class RunSpend {
  readonly spent: Spent = { usd: 0, tokens: 0 };
  private readonly stops = new Set<(why: string) => void>();

  constructor(
    readonly run: Budget | undefined,
    readonly day: { budget: Budget; spent: Spent } | undefined,
  ) {}

  /** The day's spend with this run's in it. */
  daySpent(): Spent | undefined {
    return this.day && { usd: this.day.spent.usd + this.spent.usd, tokens: this.day.spent.tokens + this.spent.tokens };
  }

  add(tokens: number, usd: number): void {
    this.spent.tokens += tokens;
    this.spent.usd += usd;
    const why = this.over();
    if (why) for (const stop of [...this.stops]) stop(why);
  }

  /** Which budget is spent, in words; undefined while none is. */
  over(): string | undefined {
    const day = this.daySpent();
    if (this.run?.usd !== undefined && this.spent.usd >= this.run.usd) return `the run's budget of $${this.run.usd} is spent`;
    if (this.run?.tokens !== undefined && this.spent.tokens >= this.run.tokens) return `the run's budget of ${this.run.tokens} tokens is spent`;
    if (day && this.day!.budget.usd !== undefined && day.usd >= this.day!.budget.usd) return `the pipeline's budget of $${this.day!.budget.usd} per day is spent`;
    if (day && this.day!.budget.tokens !== undefined && day.tokens >= this.day!.budget.tokens) return `the pipeline's budget of ${this.day!.budget.tokens} tokens per day is spent`;
    return undefined;
  }

  /** Calls `stop` when a run or day budget is spent while the step runs; returns the unsubscribe. */
  watch(stop: (why: string) => void): () => void {
    this.stops.add(stop);
    return () => this.stops.delete(stop);
  }
}
