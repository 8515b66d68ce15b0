/**
 * What a model call asks for, read from its request before it goes out: the
 * model, the most output it allows, whether it generates (and so costs), and
 * the body as it goes on. A streamed Chat Completions or Completions request
 * is made to ask for its usage (`stream_options.include_usage`), which such
 * an answer otherwise leaves out. Also the worst case a call is charged at
 * when its answer never reports usage. Pure.
 */
import type { CallTokens } from './prices.js';

/** A call that names no output limit and reports no usage is charged this many output tokens. */
export const DEFAULT_MAX_OUTPUT = 128_000;
/** The most output tokens a request is believed to ask for (larger or odd values count as this). */
const MAX_OUTPUT = 10_000_000;

export interface CallRequest {
  /** what goes to the model: the step's body, or that body asking for usage */
  body: Buffer;
  model: string | null;
  /** whether the call generates (messages, responses, completions), so costs even when the step hangs up */
  generates: boolean;
  /** the most output tokens the answer may hold (its limit times its choices) */
  maxOutput: number;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A positive whole count, or undefined. */
function positive(v: unknown, max: number): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) && v >= 1 ? Math.min(Math.floor(v), max) : undefined;
}

/** `path` is the call's path without its query, as it goes out (already checked to be a model call). */
export function readCallRequest(method: string, path: string, body: Buffer): CallRequest {
  const generates = method === 'POST' && /^\/v1\/(messages|responses|chat\/completions|completions)$/.test(path);
  if (!generates) return { body, model: null, generates, maxOutput: 0 };
  let o: unknown;
  try {
    o = JSON.parse(body.toString('utf8'));
  } catch {
    o = undefined;
  }
  if (!isObj(o)) return { body, model: null, generates, maxOutput: DEFAULT_MAX_OUTPUT };
  const model = typeof o.model === 'string' && o.model !== '' ? o.model.slice(0, 200) : null;
  const limit =
    path === '/v1/messages'
      ? positive(o.max_tokens, MAX_OUTPUT)
      : path === '/v1/responses'
        ? positive(o.max_output_tokens, MAX_OUTPUT)
        : (positive(o.max_completion_tokens, MAX_OUTPUT) ?? positive(o.max_tokens, MAX_OUTPUT));
  const choices = path === '/v1/chat/completions' || path === '/v1/completions' ? Math.max(positive(o.n, 128) ?? 1, positive(o.best_of, 128) ?? 1) : 1;
  const maxOutput = Math.min((limit ?? DEFAULT_MAX_OUTPUT) * choices, MAX_OUTPUT);
  let out = body;
  if ((path === '/v1/chat/completions' || path === '/v1/completions') && o.stream === true) {
    const options = isObj(o.stream_options) ? o.stream_options : {};
    if (options.include_usage !== true) out = Buffer.from(JSON.stringify({ ...o, stream_options: { ...options, include_usage: true } }));
  }
  return { body: out, model, generates, maxOutput };
}

/**
 * The tokens a call is charged when its answer reported no (final) usage: the
 * input the answer reported, else as many tokens as the request had bytes (a
 * token is at least a byte); the output its request allowed.
 */
export function worstCaseTokens(req: Pick<CallRequest, 'maxOutput'>, requestBytes: number, reported: CallTokens): CallTokens {
  const reportedInput = reported.inputTokens + reported.cacheReadTokens + reported.cacheWriteTokens;
  return {
    inputTokens: reportedInput > 0 ? reported.inputTokens : requestBytes,
    cacheReadTokens: reportedInput > 0 ? reported.cacheReadTokens : 0,
    cacheWriteTokens: reportedInput > 0 ? reported.cacheWriteTokens : 0,
    outputTokens: Math.max(reported.outputTokens, req.maxOutput),
  };
}
