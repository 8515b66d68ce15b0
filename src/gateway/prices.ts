/**
 * Model prices for the agent gateway's metering: a default table, the lookup
 * that maps the model name an API reports (dated, or with a provider prefix)
 * to a table entry, and the cost of one call's tokens. Pure.
 */

/** USD per million tokens. */
export interface Price {
  input: number;
  output: number;
  /** Defaults to input × 0.1. */
  cache_read?: number;
  /** Defaults to input × 1.25. */
  cache_write?: number;
}

/**
 * One call's tokens, normalised across APIs: `inputTokens` is the uncached
 * input only (OpenAI's input_tokens, which include cached ones, minus those).
 */
export interface CallTokens {
  inputTokens: number;
  outputTokens: number;
  cacheReadTokens: number;
  cacheWriteTokens: number;
}

/**
 * Prices as published by the providers, USD per million tokens; override per
 * model with `prices:` in the pipeline file. Anthropic's cache_write is the
 * 5-minute cache write price; OpenAI has no separate cache write charge.
 */
export const DEFAULT_PRICES: Record<string, Price> = {
  // the models Claude Code 2.1 knows, at the prices its own model catalog gives (5-minute cache writes)
  'claude-opus-5-5': { input: 4, output: 20, cache_read: 0.2, cache_write: 5 },
  'claude-opus-5': { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 },
  'claude-sonnet-5-5': { input: 2, output: 10, cache_read: 0.1, cache_write: 2.5 },
  'claude-sonnet-5': { input: 2, output: 10, cache_read: 0.2, cache_write: 2.5 },
  'claude-haiku-5-5': { input: 0.1, output: 0.5, cache_read: 0.01, cache_write: 0.125 },
  'claude-opus-4-6': { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 },
  'claude-sonnet-4-6': { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  'claude-opus-4-5': { input: 5, output: 25, cache_read: 0.5, cache_write: 6.25 },
  'claude-sonnet-4-5': { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  'claude-haiku-4-5': { input: 1, output: 5, cache_read: 0.1, cache_write: 1.25 },
  'claude-opus-4-1': { input: 15, output: 75, cache_read: 1.5, cache_write: 18.75 },
  'claude-sonnet-4': { input: 3, output: 15, cache_read: 0.3, cache_write: 3.75 },
  'gpt-5': { input: 1.25, output: 10, cache_read: 0.125 },
  'gpt-5-pro': { input: 15, output: 120 },
  'o1-pro': { input: 150, output: 600 },
  'o3-pro': { input: 20, output: 80 },
  'gpt-5-mini': { input: 0.25, output: 2, cache_read: 0.025 },
  'gpt-5-codex': { input: 1.25, output: 10, cache_read: 0.125 },
  'gpt-4.1': { input: 2, output: 8, cache_read: 0.5 },
  'o4-mini': { input: 1.1, output: 4.4, cache_read: 0.275 },
};

/** `-20250929` (Anthropic), `-2025-08-07` (OpenAI), `@20250929` (Vertex). */
const DATE_SUFFIX = /[-@](?:\d{8}|\d{4}-\d{2}-\d{2})$/;
/** `anthropic/`, `openai/`: one leading path segment. */
const PROVIDER_PREFIX = /^[^/]+\//;

/**
 * The price of `model`: the exact key, else the name without a trailing date,
 * else without a provider prefix (and then without a date). Own keys only, so
 * `constructor` or `__proto__` is unpriced.
 */
export function priceFor(model: string | null, table: Record<string, Price>): Price | undefined {
  if (model === null) return undefined;
  const bare = model.replace(PROVIDER_PREFIX, '');
  for (const key of [model, model.replace(DATE_SUFFIX, ''), bare, bare.replace(DATE_SUFFIX, '')]) {
    if (Object.hasOwn(table, key)) return table[key];
  }
  return undefined;
}

/** The USD cost of a call, rounded to 1e-9; null when the model is unpriced. */
export function costOf(u: CallTokens, price: Price | undefined): number | null {
  if (price === undefined) return null;
  const cacheRead = price.cache_read ?? price.input * 0.1;
  const cacheWrite = price.cache_write ?? price.input * 1.25;
  // USD × 1e6; ×1e3 gives units of 1e-9 USD.
  const micro =
    u.inputTokens * price.input +
    u.outputTokens * price.output +
    u.cacheReadTokens * cacheRead +
    u.cacheWriteTokens * cacheWrite;
  return Math.round(micro * 1e3) / 1e9;
}
