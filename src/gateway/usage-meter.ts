/**
 * Reads the token usage out of one model API response as it streams past the
 * agent gateway: Anthropic Messages or OpenAI (Responses, Chat Completions),
 * as a JSON body or a server-sent event stream, fed in arbitrary chunks. It
 * holds at most one unfinished SSE line or event (1 MiB, longer ones are
 * dropped) or one JSON body (`maxBytes`, past which it reports zeros), and
 * trusts nothing it reads: bad numbers count as 0. The body must already be
 * decoded (no content-encoding). Pure.
 */

import type { CallTokens } from './prices.js';

export type ModelApiKind = 'anthropic' | 'openai';

export interface MeteredUsage extends CallTokens {
  model: string | null;
}

const MAX_LINE = 1024 * 1024;
const DEFAULT_MAX_JSON = 8 * 1024 * 1024;
const MAX_MODEL = 200;
const OPENAI_FINAL = new Set(['response.completed', 'response.incomplete', 'response.failed']);

type Obj = Record<string, unknown>;

function asObj(v: unknown): Obj | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Obj) : undefined;
}

/** A token count: finite, >= 0 and < 1e12, else 0. */
function count(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v >= 0 && v < 1e12 ? Math.floor(v) : 0;
}

function parseObj(text: string): Obj | undefined {
  try {
    return asObj(JSON.parse(text));
  } catch {
    return undefined;
  }
}

export class UsageMeter {
  private mode: 'json' | 'sse' | 'sniff';
  private readonly usage: MeteredUsage = { model: null, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  private result: MeteredUsage | undefined;
  // JSON body.
  private body: Buffer[] = [];
  private bodySize = 0;
  private overflow = false;
  // SSE: the unfinished line, and the event being gathered.
  private line: Buffer[] = [];
  private lineSize = 0;
  private droppingLine = false;
  private skipLF = false;
  private firstLine = true;
  private eventName = '';
  private data: string[] = [];
  private dataSize = 0;
  private eventBroken = false;
  private done = false;
  /** the answer's final usage was read (Anthropic's message_delta or body, OpenAI's last event or body) */
  private final = false;

  /** `contentType` picks the format; when absent it is sniffed from the first byte that is not white space. */
  constructor(
    private readonly kind: ModelApiKind,
    contentType: string | undefined,
    private readonly maxBytes: number = DEFAULT_MAX_JSON,
  ) {
    const media = contentType?.split(';')[0]?.trim().toLowerCase() ?? '';
    this.mode = media === 'text/event-stream' ? 'sse' : media === '' ? 'sniff' : 'json';
  }

  push(chunk: Buffer): void {
    if (this.result !== undefined || chunk.length === 0) return;
    if (this.mode === 'sniff') {
      let i = 0;
      while (i < chunk.length && (chunk[i] === 0x20 || chunk[i] === 0x09 || chunk[i] === 0x0a || chunk[i] === 0x0d)) i++;
      if (i === chunk.length) return;
      this.mode = chunk[i] === 0x7b || chunk[i] === 0x5b ? 'json' : 'sse';
      chunk = chunk.subarray(i);
    }
    if (this.mode === 'json') this.pushJson(chunk);
    else this.pushSse(chunk);
  }

  /** Whether the answer reported its final usage: else it ended early, or never said what it cost. */
  get complete(): boolean {
    return this.final;
  }

  /** The call's usage; zeros for what was not reported. Later calls return the same. */
  end(): MeteredUsage {
    if (this.result === undefined) {
      if (this.mode === 'json' && !this.overflow && this.bodySize > 0) {
        const o = parseObj(Buffer.concat(this.body).toString('utf8').replace(/^\uFEFF/, ''));
        if (o !== undefined) this.onObject(null, o);
      } else if (this.mode === 'sse') {
        if (this.lineSize > 0 || this.droppingLine) this.endLine(Buffer.alloc(0));
        this.dispatch(); // a last event without its blank line still counts
      }
      this.body = [];
      this.line = [];
      this.data = [];
      this.result = this.usage;
    }
    return { ...this.result };
  }

  private pushJson(chunk: Buffer): void {
    if (this.overflow) return;
    if (this.bodySize + chunk.length > this.maxBytes) {
      this.overflow = true;
      this.body = [];
      return;
    }
    this.body.push(Buffer.from(chunk));
    this.bodySize += chunk.length;
  }

  /** Splits on LF, CRLF or CR (a CRLF may straddle two chunks). */
  private pushSse(chunk: Buffer): void {
    let start = 0;
    if (this.skipLF) {
      this.skipLF = false;
      if (chunk[0] === 0x0a) start = 1;
    }
    let cr = -2;
    let lf = -2;
    while (start < chunk.length) {
      if (cr !== -1 && cr < start) cr = chunk.indexOf(0x0d, start);
      if (lf !== -1 && lf < start) lf = chunk.indexOf(0x0a, start);
      const end = cr < 0 ? lf : lf < 0 ? cr : Math.min(cr, lf);
      if (end < 0) break;
      this.endLine(chunk.subarray(start, end));
      start = end + 1;
      if (chunk[end] === 0x0d) {
        if (start === chunk.length) this.skipLF = true;
        else if (chunk[start] === 0x0a) start++;
      }
    }
    if (start < chunk.length) this.appendLine(chunk.subarray(start));
  }

  private appendLine(piece: Buffer): void {
    if (this.droppingLine) return;
    if (this.lineSize + piece.length > MAX_LINE) {
      this.droppingLine = true;
      this.line = [];
      this.lineSize = 0;
      return;
    }
    this.line.push(Buffer.from(piece));
    this.lineSize += piece.length;
  }

  private endLine(last: Buffer): void {
    const tooLong = this.droppingLine || this.lineSize + last.length > MAX_LINE;
    const bytes = tooLong ? undefined : this.lineSize === 0 ? last : Buffer.concat([...this.line, last]);
    this.line = [];
    this.lineSize = 0;
    this.droppingLine = false;
    const first = this.firstLine;
    this.firstLine = false;
    if (bytes === undefined) {
      this.eventBroken = true; // its event lost a line: parsing the rest would mislead
      return;
    }
    let text = bytes.toString('utf8');
    if (first && text.startsWith('\uFEFF')) text = text.slice(1);
    this.onLine(text);
  }

  private onLine(text: string): void {
    if (text === '') return this.dispatch();
    if (this.done || text.startsWith(':')) return;
    const colon = text.indexOf(':');
    const field = colon < 0 ? text : text.slice(0, colon);
    let value = colon < 0 ? '' : text.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'event') {
      this.eventName = value;
    } else if (field === 'data' && !this.eventBroken) {
      this.dataSize += value.length + 1;
      if (this.dataSize > MAX_LINE) {
        this.eventBroken = true;
        this.data = [];
      } else {
        this.data.push(value);
      }
    }
  }

  private dispatch(): void {
    const { eventName, data, eventBroken } = this;
    this.eventName = '';
    this.data = [];
    this.dataSize = 0;
    this.eventBroken = false;
    if (eventBroken || data.length === 0 || this.done) return;
    const text = data.join('\n');
    if (text.trim() === '[DONE]') {
      this.done = true;
      return;
    }
    const o = parseObj(text);
    if (o !== undefined) this.onObject(eventName, o);
  }

  /** One SSE event's data (`event` is its event name, '' for none), or the JSON body (`event` null). */
  private onObject(event: string | null, o: Obj): void {
    const type = typeof o.type === 'string' ? o.type : (event ?? '');
    if (this.kind === 'anthropic') {
      if (event === null) this.anthropicMessage(o, true);
      else if (type === 'message_start') this.anthropicMessage(asObj(o.message), false);
      else if (type === 'message_delta') this.anthropicUsage(asObj(o.usage), true);
      return;
    }
    if (type.startsWith('response.')) {
      const r = asObj(o.response);
      if (r === undefined) return;
      this.setModel(r.model); // response.created names the model before any usage
      if (OPENAI_FINAL.has(type)) this.openaiUsage(asObj(r.usage));
      return;
    }
    this.setModel(o.model); // a Responses or Chat Completions body, or a chat chunk
    this.openaiUsage(asObj(o.usage));
  }

  private setModel(v: unknown): void {
    if (typeof v !== 'string' || v === '') return;
    this.usage.model = v.length <= MAX_MODEL ? v : v.slice(0, MAX_MODEL).replace(/[\uD800-\uDBFF]$/, '');
  }

  private anthropicMessage(m: Obj | undefined, final: boolean): void {
    if (m === undefined) return;
    this.setModel(m.model);
    this.anthropicUsage(asObj(m.usage), final);
  }

  /** Anthropic counts are cumulative: each one reported replaces the last (null means not reported). */
  private anthropicUsage(u: Obj | undefined, final: boolean): void {
    if (u === undefined) return;
    if (final) this.final = true;
    const u2 = this.usage;
    if (u.input_tokens != null) u2.inputTokens = count(u.input_tokens);
    if (u.output_tokens != null) u2.outputTokens = count(u.output_tokens);
    if (u.cache_read_input_tokens != null) u2.cacheReadTokens = count(u.cache_read_input_tokens);
    if (u.cache_creation_input_tokens != null) u2.cacheWriteTokens = count(u.cache_creation_input_tokens);
  }

  /** OpenAI input counts include the cached tokens: split them out. */
  private openaiUsage(u: Obj | undefined): void {
    if (u === undefined) return;
    this.final = true;
    const responses = u.input_tokens != null || u.output_tokens != null;
    const input = count(responses ? u.input_tokens : u.prompt_tokens);
    const details = asObj(responses ? u.input_tokens_details : u.prompt_tokens_details);
    const cached = Math.min(input, count(details?.cached_tokens));
    this.usage.inputTokens = input - cached;
    this.usage.outputTokens = count(responses ? u.output_tokens : u.completion_tokens);
    this.usage.cacheReadTokens = cached;
    this.usage.cacheWriteTokens = 0;
  }
}
