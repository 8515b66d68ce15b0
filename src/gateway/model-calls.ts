/**
 * A step's model calls: forwarded to the model's real endpoint with the real
 * credential added (whatever the step sent is dropped), each answer streamed
 * back as it comes while its usage is read, and one `call` event per call.
 * Only the API's model calls go (a step may not spend the key on batches or
 * files, which the gateway could not meter). Past the step's budget a call is
 * refused in the API's own error format, so the CLI reports it and does not
 * retry; with a budget, calls go one at a time, so none passes it by being in
 * flight while another spends it.
 */
import http from 'node:http';
import https from 'node:https';
import type { CallEvent, GatewayEvent, ModelRoute } from './config.js';
import type { Ledger } from './ledger.js';
import { costOf, priceFor, type Price } from './prices.js';
import { UsageMeter } from './usage-meter.js';

/** Headers that belong to one hop, or carry a credential the step made up: never forwarded. */
const DROPPED = new Set(['host', 'connection', 'keep-alive', 'proxy-authorization', 'proxy-connection', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'x-api-key', 'authorization', 'accept-encoding']);

/** The calls an agent CLI makes, per API: anything else is refused. */
const MODEL_PATHS: Record<ModelRoute['kind'], RegExp> = {
  anthropic: /^(POST \/v1\/messages(\/count_tokens)?|GET \/v1\/models(\/[A-Za-z0-9._:-]+)?)$/,
  openai: /^(POST \/v1\/(responses|chat\/completions|completions)|GET \/v1\/models(\/[A-Za-z0-9._:-]+)?)$/,
};

/** At most this many calls at once without a budget (one at a time with one). */
const MAX_IN_FLIGHT = 16;

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

/** Whether `METHOD /path` is a model call of this API. Pure. */
export function isModelCall(kind: ModelRoute['kind'], method: string, pathAndQuery: string): boolean {
  const p = pathAndQuery.split('?')[0]!.replace(/\/+$/, '');
  return MODEL_PATHS[kind].test(`${method} ${p}`);
}

export class ModelCalls {
  private inFlight = 0;
  private readonly waiting: Array<() => void> = [];
  /** a USD budget cannot see an unpriced model's cost: it is charged at the dearest price known */
  private readonly dearest: Price | undefined;

  constructor(
    private readonly route: ModelRoute,
    private readonly ledger: Ledger,
    private readonly prices: Record<string, Price>,
    private readonly emit: (e: GatewayEvent) => void,
    private readonly budgetRefusals: { count: number },
  ) {
    const all = Object.values(prices);
    this.dearest = all.length ? all.reduce((a, b) => (b.input + b.output > a.input + a.output ? b : a)) : undefined;
  }

  forward(req: http.IncomingMessage, res: http.ServerResponse, pathAndQuery: string): void {
    const method = req.method ?? 'GET';
    if (!isModelCall(this.route.kind, method, pathAndQuery)) {
      const body = refusalBody(this.route.kind, `runner gateway: ${method} ${pathAndQuery.slice(0, 200)} is not a model call; the gateway passes model calls only`, 'not_a_model_call');
      res.writeHead(403, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      req.resume();
      this.emit({ ...zero(403, Date.now()), refused: 'path', path: `${method} ${pathAndQuery.slice(0, 200)}` });
      return;
    }
    const limit = this.ledger.limited ? 1 : MAX_IN_FLIGHT;
    const go = () => {
      this.inFlight++;
      this.call(req, res, pathAndQuery, () => {
        this.inFlight--;
        this.waiting.shift()?.();
      });
    };
    if (this.inFlight < limit) go();
    else this.waiting.push(go);
  }

  private call(req: http.IncomingMessage, res: http.ServerResponse, pathAndQuery: string, done: () => void): void {
    const started = Date.now();
    const refusal = this.ledger.refusal();
    if (refusal) {
      const body = refusalBody(this.route.kind, `runner gateway: ${refusal}`);
      res.writeHead(400, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
      req.resume();
      // said once; a step that keeps asking is counted, not logged a line a call
      if (this.budgetRefusals.count++ === 0) this.emit({ ...zero(400, started), refused: 'budget' });
      done();
      return;
    }
    const url = upstreamUrl(this.route.upstream, pathAndQuery);
    const headers: http.OutgoingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!DROPPED.has(k) && v !== undefined) headers[k] = v;
    // usage is read from the answer: it must come uncompressed
    headers['accept-encoding'] = 'identity';
    if (this.route.auth) headers[this.route.auth.header] = this.route.auth.value;
    const send = url.protocol === 'https:' ? https.request : http.request;
    let settled = false;
    const settle = (e: CallEvent) => {
      if (settled) return;
      settled = true;
      const tokens = e.inputTokens + e.outputTokens + e.cacheReadTokens + e.cacheWriteTokens;
      this.ledger.add(tokens, e.costUsd ?? (this.ledger.limitedUsd ? costOf(e, this.dearest) : null));
      this.emit(e);
      done();
    };
    const up = send(url, { method: req.method ?? 'POST', headers }, (answer) => {
      const meter = new UsageMeter(this.route.kind, answer.headers['content-type']);
      const back: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(answer.headers)) if (!DROPPED.has(k) && v !== undefined) back[k] = v;
      res.writeHead(answer.statusCode ?? 502, back);
      answer.on('data', (chunk: Buffer) => {
        meter.push(chunk);
        if (!res.write(chunk)) {
          answer.pause();
          res.once('drain', () => answer.resume());
        }
      });
      const finish = () => {
        res.end();
        const u = meter.end();
        const cost = costOf(u, priceFor(u.model, this.prices));
        settle({ event: 'call', model: u.model, inputTokens: u.inputTokens, outputTokens: u.outputTokens, cacheReadTokens: u.cacheReadTokens, cacheWriteTokens: u.cacheWriteTokens, costUsd: cost, durationMs: Date.now() - started, status: answer.statusCode ?? 0 });
      };
      answer.on('end', finish);
      answer.on('close', finish);
      answer.on('error', () => {
        finish();
        res.destroy();
      });
    });
    up.on('error', (err) => {
      if (!res.headersSent) {
        const body = JSON.stringify({ type: 'error', error: { type: 'api_error', message: `runner gateway: the model API at ${url.origin} did not answer (${err.message})` } });
        res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
        res.end(body);
      } else res.destroy();
      settle(zero(502, started));
    });
    // the step hung up: so does the call
    res.on('close', () => {
      if (!res.writableFinished) up.destroy();
    });
    req.on('error', () => up.destroy());
    req.pipe(up);
  }
}

function zero(status: number, started: number): CallEvent {
  return { event: 'call', model: null, inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0, costUsd: 0, durationMs: Date.now() - started, status };
}
