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
/**
 * A call whose input is stored at the provider (a previous response, a
 * conversation, a stored prompt, a file) may carry far more than its
 * request's bytes: without reported usage it is charged this many input tokens.
 */
export const STORED_INPUT_TOKENS = 1_000_000;
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
  /** it refers to input stored at the provider: its request's size says nothing of its input */
  storedInput: boolean;
  /** why it may not go: a call the gateway could not meter */
  refusal?: string;
}

/** Whether `key` is a key anywhere in `v` (bounded: a body deeper or larger than this counts as having it). */
function hasKey(v: unknown, key: string, budget = { nodes: 200_000 }, depth = 0): boolean {
  if (--budget.nodes < 0 || depth > 64) return true;
  if (Array.isArray(v)) return v.some((x) => hasKey(x, key, budget, depth + 1));
  if (!isObj(v)) return false;
  return Object.hasOwn(v, key) || Object.values(v).some((x) => hasKey(x, key, budget, depth + 1));
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
  if (!generates) return { body, model: null, generates, maxOutput: 0, storedInput: false };
  let o: unknown;
  try {
    o = JSON.parse(body.toString('utf8'));
  } catch {
    o = undefined;
  }
  if (!isObj(o)) return { body, model: null, generates, maxOutput: DEFAULT_MAX_OUTPUT, storedInput: false };
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
  const storedInput = o.previous_response_id != null || o.conversation != null || (o.prompt != null && typeof o.prompt === 'object') || hasKey(o, 'file_id');
  // a background response is answered at once, queued, and billed as it runs: its usage never passes the gateway
  const refusal = path === '/v1/responses' && o.background === true ? 'a background response (background: true) runs after its answer, where the gateway cannot meter it; call it in the foreground' : undefined;
  return { body: out, model, generates, maxOutput, storedInput, ...(refusal ? { refusal } : {}) };
}

/**
 * The tokens a call is charged when its answer reported no (final) usage: the
 * input the answer reported, else as many tokens as the request had bytes (a
 * token is at least a byte; STORED_INPUT_TOKENS when it refers to input stored
 * at the provider); the output its request allowed.
 */
export function worstCaseTokens(req: Pick<CallRequest, 'maxOutput' | 'storedInput'>, requestBytes: number, reported: CallTokens): CallTokens {
  const reportedInput = reported.inputTokens + reported.cacheReadTokens + reported.cacheWriteTokens;
  return {
    inputTokens: reportedInput > 0 ? reported.inputTokens : req.storedInput ? Math.max(STORED_INPUT_TOKENS, requestBytes) : requestBytes,
    cacheReadTokens: reportedInput > 0 ? reported.cacheReadTokens : 0,
    cacheWriteTokens: reportedInput > 0 ? reported.cacheWriteTokens : 0,
    outputTokens: Math.max(reported.outputTokens, req.maxOutput),
  };
}
