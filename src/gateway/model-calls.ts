/**
 * A step's model calls: forwarded to the model's real endpoint with the real
 * credential added (whatever the step sent is dropped), each answer streamed
 * back as it comes while its usage is read, and one `call` event per call.
 * Only the API's model calls go, judged on the path as it goes out (a step
 * may not spend the key on batches or files, which the gateway could not
 * meter). Past the step's budget a call is refused in the API's own error
 * format, so the CLI reports it and does not retry; with a budget, calls go
 * one at a time, so none passes it by being in flight while another spends it.
 *
 * Whatever the gateway forwards, it counts: a streamed chat request is made
 * to ask for its usage; an answer whose step hung up is read on (bounded in
 * time and bytes) until its usage comes; and an answer that ends without
 * usage, or is still open when the gateway stops, is charged its worst case
 * (call-request.ts).
 */
import http from 'node:http';
import type { CallEvent, GatewayEvent, ModelRoute } from './config.js';
import { readCallRequest, worstCaseTokens, type CallRequest } from './call-request.js';
import type { Ledger } from './ledger.js';
import { outgoingRequest, type Outgoing } from './outgoing.js';
import { costOf, priceFor, type Price } from './prices.js';
import { UsageMeter } from './usage-meter.js';

/** Headers that belong to one hop, or carry a credential the step made up: never forwarded. */
const DROPPED = new Set(['host', 'connection', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'x-api-key', 'authorization', 'accept-encoding', 'content-length']);

/** The calls an agent CLI makes, per API: anything else is refused. */
const MODEL_PATHS: Record<ModelRoute['kind'], RegExp> = {
  anthropic: /^(POST \/v1\/messages(\/count_tokens)?|GET \/v1\/models(\/[A-Za-z0-9_:-][A-Za-z0-9._:-]*)?)$/,
  openai: /^(POST \/v1\/(responses|chat\/completions|completions)|GET \/v1\/models(\/[A-Za-z0-9_:-][A-Za-z0-9._:-]*)?)$/,
};

/** At most this many calls at once without a budget (one at a time with one). */
const MAX_IN_FLIGHT = 16;
/** The largest request a step may send (Anthropic's own limit is 32 MB). */
export const MAX_REQUEST_BYTES = 32 * 1024 * 1024;
/** Request bodies held at once, all calls together: a step cannot drown its gateway (512 MB) in them. */
export const MAX_BODIES_BYTES = 64 * 1024 * 1024;
/** Once its step hung up, an answer is read on for its usage this long and this much at most; then charged its worst case. */
export const DRAIN_MS = 5 * 60_000;
export const DRAIN_BYTES = 64 * 1024 * 1024;
/** Distinct refused paths said one by one; past them refusals are only counted. */
const MAX_PATHS_SAID = 20;

/** The API's root without a trailing /v1: the CLIs add /v1/... themselves. */
export function upstreamUrl(upstream: string, pathAndQuery: string): URL {
  const root = upstream.replace(/\/+$/, '').replace(/\/v1$/, '');
  return new URL(root + (pathAndQuery.startsWith('/') ? pathAndQuery : `/${pathAndQuery}`));
}

export function refusalBody(kind: ModelRoute['kind'], message: string, code = 'budget_exhausted'): string {
  return kind === 'anthropic'
    ? JSON.stringify({ type: 'error', error: { type: code === 'budget_exhausted' ? 'invalid_request_error' : 'permission_error', message } })
    : JSON.stringify({ error: { message, type: 'invalid_request_error', code } });
}

/** Whether `METHOD /path` is a model call of this API, as the path is written (no dot segments, escapes or doubled slashes). Pure. */
export function isModelCall(kind: ModelRoute['kind'], method: string, pathAndQuery: string): boolean {
  const p = pathAndQuery.split('?')[0]!;
  if (/[%\\]|\/\/|\/\.\.?(\/|$)/.test(p)) return false;
  return MODEL_PATHS[kind].test(`${method} ${p.replace(/\/+$/, '')}`);
}

/**
 * The URL a call goes out to, when the path it will have there is a model
 * call: undefined when it is not, or when the URL parser would make another
 * path of it (`/v1/models/..` is `/v1/`). Pure.
 */
export function modelCallUrl(route: Pick<ModelRoute, 'kind' | 'upstream'>, method: string, pathAndQuery: string): { url: URL; path: string } | undefined {
  if (!pathAndQuery.startsWith('/') || !isModelCall(route.kind, method, pathAndQuery)) return undefined;
  const url = upstreamUrl(route.upstream, pathAndQuery);
  const root = upstreamUrl(route.upstream, '/').pathname.replace(/\/$/, '');
  const path = pathAndQuery.split('?')[0]!.replace(/\/+$/, '');
  // checked on the way out: the path the model's host will see is the one judged
  if (url.pathname.replace(/\/+$/, '') !== root + path || !isModelCall(route.kind, method, url.pathname.slice(root.length))) return undefined;
  return { url, path };
}

export class ModelCalls {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  /** calls sent and not yet settled: charged their worst case if the gateway stops first */
  private readonly open = new Set<() => void>();
  /** a USD budget cannot see an unpriced model's cost: it is charged at the dearest price known */
  private readonly dearest: Price | undefined;
  /** refused paths: said once each (a bounded number), then counted */
  readonly pathRefusals = { count: 0, said: new Set<string>() };
  private nextId = 1;
  /** room for request bodies: each call reserves its declared length (or the most) before it reads its body */
  private readonly bodies = new Reservations(MAX_BODIES_BYTES);

  constructor(
    private readonly route: ModelRoute,
    private readonly ledger: Ledger,
    private readonly prices: Record<string, Price>,
    private readonly emit: (e: GatewayEvent) => void,
    private readonly budgetRefusals: { count: number },
    /** how the gateway's own requests go out: the runner's CA bundle, the company's proxy */
    private readonly outgoing: Outgoing = {},
  ) {
    const all = Object.values(prices);
    this.dearest = all.length ? all.reduce((a, b) => (b.input + b.output > a.input + a.output ? b : a)) : undefined;
  }

  forward(req: http.IncomingMessage, res: http.ServerResponse, pathAndQuery: string): void {
    const method = req.method ?? 'GET';
    const target = modelCallUrl(this.route, method, pathAndQuery);
    if (!target) return this.refusePath(req, res, `${method} ${pathAndQuery.slice(0, 200)}`);
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (declared > MAX_REQUEST_BYTES) return this.tooLarge(req, res);
    // a body is read only once there is room for it: what the step sends waits in its socket meanwhile
    // a request with neither a length nor a transfer-encoding has no body (GET /v1/models): it needs no room
    const reserve = Number.isInteger(declared) && declared >= 0 ? declared : req.headers['transfer-encoding'] !== undefined ? MAX_REQUEST_BYTES : 0;
    void this.bodies.take(reserve).then((release) =>
      readBody(req, MAX_REQUEST_BYTES, (body) => {
        if (!body) {
          release();
          return this.tooLarge(req, res);
        }
        const call = readCallRequest(method, target.path, body);
        if (call.refusal) {
          release();
          return this.refusePath(req, res, `${method} ${target.path}`, call.refusal);
        }
        const limit = this.ledger.limited ? 1 : MAX_IN_FLIGHT;
        const go = () => {
          this.inFlight++;
          this.call(req, res, target.url, call, body.length, release, () => {
            this.inFlight--;
            this.waiting.shift()?.();
          });
        };
        if (this.inFlight < limit) go();
        else this.waiting.push(go);
      }),
    );
  }

  private tooLarge(req: http.IncomingMessage, res: http.ServerResponse): void {
    const message = `runner gateway: a request larger than ${MAX_REQUEST_BYTES / 1024 / 1024} MiB, or one cut short, is not sent`;
    const text = refusalBody(this.route.kind, message, 'request_too_large');
    if (!res.headersSent && !res.destroyed) res.writeHead(413, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), connection: 'close' }).end(text);
    req.destroy();
  }

  /** The gateway stops: nothing more is sent, and every call still open is charged now, at its worst case. */
  abandonAll(): void {
    this.stopped = true;
    this.waiting.length = 0;
    for (const abandon of [...this.open]) abandon();
  }

  private stopped = false;

  /** `why`: said in place of "not a model call" (a model call the gateway could not meter). */
  private refusePath(req: http.IncomingMessage, res: http.ServerResponse, what: string, why?: string): void {
    const body = refusalBody(this.route.kind, `runner gateway: ${what} ${why ? `refused: ${why}` : 'is not a model call; the gateway passes model calls only'}`, 'not_a_model_call');
    res.writeHead(403, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    req.resume();
    this.pathRefusals.count++;
    // said once per path, for a bounded number of paths: a flood of refusals is a count, not a log
    if (!this.pathRefusals.said.has(what) && this.pathRefusals.said.size < MAX_PATHS_SAID) {
      this.pathRefusals.said.add(what);
      this.emit({ ...zero(403, Date.now()), refused: 'path', path: what });
    }
  }

  private call(req: http.IncomingMessage, res: http.ServerResponse, url: URL, call: CallRequest, requestBytes: number, release: () => void, done: () => void): void {
    const started = Date.now();
    // a step that hung up while its call waited, or a gateway stopping: nothing was sent, nothing is owed
    if (res.destroyed || res.writableEnded || this.stopped) {
      release();
      res.destroy();
      return done();
    }
    const refusal = this.ledger.refusal();
    if (refusal) {
      release();
      const body = refusalBody(this.route.kind, `runner gateway: ${refusal}`);
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      // said once; a step that keeps asking is counted, not logged a line a call
      if (this.budgetRefusals.count++ === 0) this.emit({ ...zero(400, started), refused: 'budget' });
      done();
      return;
    }
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!DROPPED.has(k) && v !== undefined) headers[k] = v;
    // usage is read from the answer: it must come uncompressed
    headers['accept-encoding'] = 'identity';
    if (call.body.length || req.method !== 'GET') headers['content-length'] = call.body.length;
    if (this.route.auth) headers[this.route.auth.header] = this.route.auth.value;
    const id = this.nextId++;
    // said before it goes: a gateway killed before the answer settles still leaves what the call may cost
    const worstTokens = worstCaseTokens(call, requestBytes, { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 });
    if (call.generates) this.emit({ event: 'call_start', id, model: call.model, worst: { ...worstTokens, costUsd: costOf(worstTokens, priceFor(call.model, this.prices) ?? this.dearest) ?? 0 } });
    let meter: UsageMeter | undefined;
    let answerStream: http.IncomingMessage | undefined;
    let clientGone = false;
    let status: number | undefined;
    let settled = false;
    let drainTimer: NodeJS.Timeout | undefined;
    const settle = (how: 'answered' | 'cut' | 'failed') => {
      if (settled) return;
      settled = true;
      clearTimeout(drainTimer);
      this.open.delete(abandon);
      const u = meter?.end() ?? { model: null, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
      const model = u.model ?? call.model;
      // a generating call that was sent and answered 2xx (or not yet) without its final usage: its worst case
      const worst = call.generates && how !== 'failed' && (status === undefined || status < 300) && !(how === 'answered' && meter?.complete);
      const tokens = worst ? worstCaseTokens(call, requestBytes, u) : u;
      const price = priceFor(model, this.prices);
      const cost = costOf(tokens, price);
      // an unpriced call against a USD budget, or a worst case: the dearest price known (its record still says unpriced)
      const charged = cost ?? (this.ledger.limitedUsd || worst ? costOf(tokens, this.dearest) : null);
      const e: CallEvent = {
        event: 'call',
        id,
        model,
        inputTokens: tokens.inputTokens,
        outputTokens: tokens.outputTokens,
        cacheReadTokens: tokens.cacheReadTokens,
        cacheWriteTokens: tokens.cacheWriteTokens,
        costUsd: cost,
        durationMs: Date.now() - started,
        status: status ?? 0,
        ...(charged !== null ? { chargedUsd: charged } : {}),
        ...(worst ? { worstCase: true as const } : {}),
      };
      const all = e.inputTokens + e.outputTokens + e.cacheReadTokens + e.cacheWriteTokens;
      this.ledger.add(all, charged);
      this.emit(e);
      done();
    };
    const abandon = () => {
      up.destroy();
      settle('cut');
    };
    this.open.add(abandon);
    const up = outgoingRequest(url, { method: req.method ?? 'POST', headers }, this.outgoing, (answer) => {
      status = answer.statusCode ?? 502;
      meter = new UsageMeter(this.route.kind, answer.headers['content-type']);
      const back: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(answer.headers)) if (!DROPPED.has(k) && v !== undefined) back[k] = v;
      if (!clientGone) res.writeHead(status, back);
      let readAfter = 0;
      answer.on('data', (chunk: Buffer) => {
        meter!.push(chunk);
        if (clientGone) {
          readAfter += chunk.length;
          if (readAfter > DRAIN_BYTES) abandon();
          return;
        }
        if (!res.write(chunk)) {
          answer.pause();
          res.once('drain', () => answer.resume());
        }
      });
      const finish = () => {
        if (!clientGone) res.end();
        settle(answer.complete ? 'answered' : 'cut');
      };
      answer.on('end', finish);
      answer.on('close', finish);
      answer.on('error', () => {
        finish();
        res.destroy();
      });
      answerStream = answer;
    });
    up.on('error', (err) => {
      if (!clientGone && !res.headersSent) {
        const body = JSON.stringify({ type: 'error', error: { type: 'api_error', message: `runner gateway: the model API at ${url.origin} did not answer (${err.message})` } });
        res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } else if (!clientGone) res.destroy();
      // no answer at all: the model did not work for it; an answer cut midway is charged by finish()
      settle(status === undefined ? 'failed' : 'cut');
    });
    // The step hung up: the call goes on, unseen, until its usage is read (within DRAIN_MS and DRAIN_BYTES).
    res.on('close', () => {
      if (res.writableFinished || settled) return;
      clientGone = true;
      answerStream?.resume();
      drainTimer = setTimeout(abandon, DRAIN_MS);
      drainTimer.unref();
    });
    up.on('finish', release);
    up.on('close', release);
    up.end(call.body);
  }
}

/** Room shared by many takers, each waiting its turn (first come, first served) until what it asks for is free. */
class Reservations {
  private used = 0;
  private readonly queue: Array<{ n: number; go: (release: () => void) => void }> = [];

  constructor(private readonly capacity: number) {}

  take(n: number): Promise<() => void> {
    const want = Math.min(n, this.capacity);
    return new Promise((go) => {
      this.queue.push({ n: want, go });
      this.pump();
    });
  }

  private pump(): void {
    while (this.queue.length && this.used + this.queue[0]!.n <= this.capacity) {
      const { n, go } = this.queue.shift()!;
      this.used += n;
      let released = false;
      go(() => {
        if (released) return;
        released = true;
        this.used -= n;
        this.pump();
      });
    }
  }
}

/** The request's body, whole, or undefined when it is larger than `max` or cut short. */
function readBody(req: http.IncomingMessage, max: number, done: (body: Buffer | undefined) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let finished = false;
  const finish = (body: Buffer | undefined) => {
    if (finished) return;
    finished = true;
    done(body);
  };
  // a step that hung up while its call waited for room: nothing to read
  if (req.destroyed) return finish(undefined);
  req.on('data', (chunk: Buffer) => {
    if (finished) return;
    size += chunk.length;
    if (size > max) {
      chunks.length = 0;
      req.pause();
      return finish(undefined);
    }
    chunks.push(chunk);
  });
  req.on('end', () => finish(Buffer.concat(chunks)));
  req.on('aborted', () => finish(undefined));
  req.on('error', () => finish(undefined));
  req.on('close', () => finish(req.complete ? Buffer.concat(chunks) : undefined));
}

function zero(status: number, started: number): CallEvent {
  return { event: 'call', model: null, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, durationMs: Date.now() - started, status };
}
