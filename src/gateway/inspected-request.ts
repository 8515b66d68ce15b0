/**
 * One request the gateway reads (inside a TLS it terminated, or plain HTTP):
 * its target normalized as the upstream will receive it and judged by its
 * host's rule; the URL, the headers and the body checked for the run's
 * secrets before anything goes upstream (the body held whole up to
 * maxBodyBytes, or, for a host that says stream, checked in a sliding window
 * as it goes); the credential set, replacing what the step sent; hop-by-hop
 * headers dropped; the answer streamed back as it comes (a redirect too:
 * passed back, never followed).
 */
import type http from 'node:http';
import type http2 from 'node:http2';
import type { GatewayEvent, InspectedHost, Inspection } from './config.js';
import type { Refusals } from './egress.js';
import { normalizeTarget, refusalLine, ruleFor, ruleProblem } from './request-rules.js';
import { SecretScanner, type ByteBudget, type SecretHit } from './secret-scan.js';

export interface InspectContext {
  inspect: Inspection;
  scanner: SecretScanner;
  /** what every held body together may take */
  budget: ByteBudget;
  refusals: Refusals;
  emit: (e: GatewayEvent) => void;
  /** rule and secret refusals told so far (each is an event the runner counts; past MAX_TOLD, not told) */
  told: { count: number };
}

/** Rule and secret refusals a gateway tells, one event each; past them it says so once and stops telling. */
export const MAX_TOLD = 10_000;

function tell(x: InspectContext, e: GatewayEvent): void {
  x.told.count++;
  if (x.told.count <= MAX_TOLD) x.emit(e);
  else if (x.told.count === MAX_TOLD + 1) x.emit({ event: 'error', message: `more than ${MAX_TOLD} requests refused by rules or for secrets: the rest are refused without an event` });
}

/** Where a request goes: its host and port as checked, and the target the step wrote (origin form). */
export interface Destination {
  host: string;
  port: number;
  /** the Host header the upstream gets */
  hostHeader: string;
  rawTarget: string;
}

export type Opener = (o: { method: string; path: string; headers: http.OutgoingHttpHeaders }, onAnswer: (answer: http.IncomingMessage) => void) => http.ClientRequest;

type Req = http.IncomingMessage | http2.Http2ServerRequest;
type Res = http.ServerResponse | http2.Http2ServerResponse;

/** Hop-by-hop headers (RFC 9110 7.6.1) and the ones HTTP/2 forbids: never passed on, either way. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'expect', 'http2-settings', 'host']);

const MIB = 1024 * 1024;

/** methods a request may be sent again with (RFC 9110 9.2.2) when its kept-alive connection was closed under it */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE']);

/** The headers to send: the step's less hop-by-hop ones (and what Connection names), the credential's in place of any of the same name (and of Authorization). Pure. */
export function outgoingHeaders(given: http.IncomingHttpHeaders, credential: InspectedHost['credential'], hostHeader: string): { headers: http.OutgoingHttpHeaders; stepHeaders: Array<[string, string]> } {
  const named = new Set(
    String(given.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const replaced = new Set(Object.keys(credential?.headers ?? {}).map((k) => k.toLowerCase()));
  if (credential) replaced.add('authorization');
  const headers: http.OutgoingHttpHeaders = {};
  const stepHeaders: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(given)) {
    const name = k.toLowerCase();
    if (v === undefined || name.startsWith(':') || HOP.has(name) || named.has(name) || replaced.has(name)) continue;
    headers[name] = v;
    for (const one of Array.isArray(v) ? v : [v]) stepHeaders.push([name, one]);
  }
  headers.host = hostHeader;
  for (const [k, v] of Object.entries(credential?.headers ?? {})) headers[k.toLowerCase()] = v;
  return { headers, stepHeaders };
}

/** An answer's headers fit to pass back on HTTP/1.1 or HTTP/2. Pure. */
export function answerHeaders(given: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const named = new Set(
    String(given.connection ?? '')
      .split(',')
      .map((s) => s.trim().toLowerCase())
      .filter(Boolean),
  );
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(given)) if (v !== undefined && !HOP.has(k) && !named.has(k)) out[k] = v;
  return out;
}

function say(res: Res, status: number, text: string, close = false): void {
  if (res.headersSent) return void res.destroy();
  const headers: http.OutgoingHttpHeaders = { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) };
  // HTTP/1.1: a refused body is not read to its end; the connection goes with the answer
  if (close && 'shouldKeepAlive' in res) headers.connection = 'close';
  res.writeHead(status, headers);
  res.end(text);
}

/** Headers that ask a server to act as if the method were another (Google's APIs, Rails, Laravel, Spring's filter read them). */
export const METHOD_OVERRIDES = ['x-http-method-override', 'x-http-method', 'x-method-override'];

/** The methods a request's override headers name, as sent (judged like its method). Pure. */
export function overrides(headers: http.IncomingHttpHeaders): string[] {
  const named: string[] = [];
  for (const h of METHOD_OVERRIDES) {
    const v = headers[h];
    for (const one of Array.isArray(v) ? v : v === undefined ? [] : [v]) named.push(...String(one).split(',').map((m) => m.trim()));
  }
  return named;
}

/** The request's body length as declared: a number, 0 for none, or undefined when it streams without one. */
function declaredLength(req: Req): number | undefined {
  const cl = req.headers['content-length'];
  if (cl !== undefined && /^\d+$/.test(String(cl))) return Number(cl);
  if ('stream' in req) return req.stream.endAfterHeaders ? 0 : undefined;
  return req.headers['transfer-encoding'] !== undefined ? undefined : 0;
}

/** Judges the request, checks it for secrets, and sends it upstream with `open` (or answers the refusal). */
export function handleInspected(x: InspectContext, req: Req, res: Res, d: Destination, open: Opener): void {
  req.on('error', () => undefined);
  res.on('error', () => undefined);
  const method = (req.method ?? 'GET').toUpperCase();
  const refuseSecret = (hit: SecretHit, where: 'url' | 'header' | 'body') => {
    tell(x, { event: 'secret_refused', host: d.host, secret: hit.secret, where, form: hit.form });
    say(res, 403, `runner gateway: a request to ${d.host} carried the value of the secret ${hit.secret} (${hit.form}, in its ${where}): refused; a secret the run holds never leaves in a request\n`, true);
  };
  // the URL is checked for secrets first: a refusal for its rule or its form names its path in events and logs
  const inRaw = x.scanner.findIn(d.rawTarget);
  if (inRaw) return refuseSecret(inRaw, 'url');
  const target = normalizeTarget(d.rawTarget);
  if ('problem' in target) {
    x.refusals.note(d.host, target.problem);
    return say(res, 400, `runner gateway: ${d.host}: ${target.problem}\n`, true);
  }
  const query = target.query ? (target.query.startsWith('?') ? target.query : `?${target.query}`) : '';
  const path = target.path + query;
  const inPath = x.scanner.findIn(path);
  if (inPath) return refuseSecret(inPath, 'url');
  const rule = ruleFor(x.inspect.hosts, d.host);
  // a method override header is judged as the method it names: many servers act on it
  for (const judged of rule ? [method, ...overrides(req.headers)] : []) {
    const why = ruleProblem(rule!, judged, target.path);
    if (!why) continue;
    tell(x, { event: 'egress_refused', host: d.host, method: judged.toUpperCase().slice(0, 32), path: target.path.slice(0, 500), rule: rule!.rule ?? rule!.host, reason: why });
    return say(res, 403, refusalLine(d.host, judged, target.path, rule!, why), true);
  }
  const { headers, stepHeaders } = outgoingHeaders(req.headers, rule?.credential, d.hostHeader);
  const inHeader = x.scanner.findIn(stepHeaders.map(([k, v]) => `${k}: ${v}`).join('\n'));
  if (inHeader) return refuseSecret(inHeader, 'header');

  const max = x.inspect.maxBodyBytes;
  const declared = declaredLength(req);
  const streams = rule?.stream === true;
  const tooLarge = (size: string) =>
    say(res, 413, `runner gateway: a request body of ${size} to ${d.host} is more than the ${(max / MIB).toFixed(max % MIB ? 1 : 0)} MiB the gateway reads whole to check for secrets: refused; to send larger bodies there, checked as they stream, set stream: true on its egress entry\n`, true);
  if (declared !== undefined && declared > max && !streams) return tooLarge(`${declared} bytes`);

  // what this request may hold: reserved whole before a byte is read, so requests waiting for room hold nothing
  const reserve = Math.min(declared ?? max, max);
  let state: 'waiting' | 'held' | 'done' = 'waiting';
  const release = () => {
    if (state === 'held') x.budget.give(reserve);
    state = 'done';
  };
  res.on('close', release);
  x.budget.take(reserve).then(
    () => {
      if (state === 'done') return x.budget.give(reserve);
      state = 'held';
      if (res.destroyed || res.writableEnded) return release();
      readAndSend();
    },
    (err: Error) => {
      state = 'done';
      say(res, 503, `runner gateway: ${err.message}\n`, true);
    },
  );

  function readAndSend(): void {
    const window = x.scanner.stream();
    let held: Buffer[] = [];
    let size = 0;
    let up: http.ClientRequest | undefined;
    let answered = false;
    let failed = false;
    const fail = (then: () => void) => {
      failed = true;
      req.removeListener('data', onData);
      req.removeListener('end', onEnd);
      up?.destroy();
      held = [];
      then();
      req.resume();
    };
    const start = (length: number | undefined, body?: Buffer, retried = false): http.ClientRequest | undefined => {
      const h = { ...headers };
      delete h['content-length'];
      if (length !== undefined) h['content-length'] = length;
      let u: http.ClientRequest;
      try {
        u = open({ method, path, headers: h }, (answer) => {
          answered = true;
          if (res.destroyed) return void answer.destroy();
          passAnswer(x, d.host, rule, answer, res);
        });
      } catch (err) {
        // a header the upstream request cannot carry (checked at the run's start; this is the backstop)
        fail(() => say(res, 502, `runner gateway: the request to ${d.host} could not be made (${(err as Error).message})\n`, true));
        return undefined;
      }
      u.on('error', (err: NodeJS.ErrnoException) => {
        if (failed) return;
        // a kept-alive connection the host closed just as it was taken again: an idempotent request, held whole,
        // is sent once more on a new one (the host never read it)
        if (!answered && !retried && body !== undefined && u.reusedSocket && err.code === 'ECONNRESET' && IDEMPOTENT.has(method)) {
          start(length, body, true)?.end(body);
          return;
        }
        failed = true;
        say(res, err.code === 'EFORBIDDEN' ? 403 : 502, upstreamProblem(d.host, err), true);
      });
      u.on('finish', release);
      res.on('close', () => {
        if (!answered || !res.writableFinished) u.destroy();
      });
      return u;
    };
    const onData = (chunk: Buffer) => {
      if (failed) return;
      size += chunk.length;
      const hit = window.push(chunk);
      if (hit) return fail(() => refuseSecret(hit, 'body'));
      if (!up) {
        if (size <= max) return void held.push(chunk);
        if (!streams) return fail(() => tooLarge(`more than ${size} bytes`));
        // past the size held whole: on to the host as it comes, checked in the window
        up = start(declared);
        if (!up) return;
        for (const b of held) up.write(b);
        held = [];
      }
      if (!up.write(chunk)) {
        req.pause();
        up.once('drain', () => req.resume());
      }
    };
    const onEnd = () => {
      if (failed) return;
      if (up) return void up.end();
      const body = Buffer.concat(held);
      held = [];
      const hit = x.scanner.findIn(body);
      if (hit) return fail(() => refuseSecret(hit, 'body'));
      const length = body.length > 0 || req.headers['content-length'] !== undefined ? body.length : undefined;
      start(length, body)?.end(body);
    };
    req.on('data', onData);
    req.on('end', onEnd);
  }
}

/** The scanners of answers, one per credentialed host's rule: the credential's own secrets only (the step may hold its other secrets). */
const answerScanners = new WeakMap<InspectedHost, { scanner: SecretScanner; hold: number } | null>();

/** The host's answer check, made once per rule: the scanner and the tail held back (the longest form of the longest value: 6 bytes a byte, JSON's \\u escape). */
function answerScanner(x: InspectContext, rule: InspectedHost | undefined): { scanner: SecretScanner; hold: number } | undefined {
  const names = rule?.credential?.secrets ?? [];
  if (!rule || names.length === 0) return undefined;
  let entry = answerScanners.get(rule);
  if (entry === undefined) {
    const values = x.inspect.secrets.filter((s) => names.includes(s.name));
    entry = values.length ? { scanner: new SecretScanner(values), hold: 6 * Math.max(...values.map((s) => Buffer.byteLength(s.value))) + 8 } : null;
    answerScanners.set(rule, entry);
  }
  return entry ?? undefined;
}

/**
 * The answer, passed back as it comes. From a host with a credential it is read on the way: an answer that carries
 * one of the credential's secrets back (a host that echoes the request's headers, an error page quoting them) is cut
 * before the value reaches the step, a tail as long as the value's longest form held back until the next bytes
 * show it is not one.
 */
function passAnswer(x: InspectContext, host: string, rule: InspectedHost | undefined, answer: http.IncomingMessage, res: Res): void {
  const check = answerScanner(x, rule);
  answer.on('error', () => res.destroy());
  if (!check) {
    res.writeHead(answer.statusCode ?? 502, answerHeaders(answer.headers));
    answer.pipe(res as http.ServerResponse);
    return;
  }
  const cut = (hit: SecretHit) => {
    tell(x, { event: 'secret_refused', host, secret: hit.secret, where: 'answer', form: hit.form });
    answer.destroy();
    if (!res.headersSent) say(res, 502, `runner gateway: the answer of ${host} carried the value of the secret ${hit.secret} back (${hit.form}): cut; the credential ${rule!.credential!.name} is the gateway's to hold\n`, true);
    else res.destroy();
  };
  const { scanner, hold } = check;
  const inHeaders = scanner.findIn(Object.entries(answer.headers).map(([k, v]) => `${k}: ${Array.isArray(v) ? v.join(', ') : (v ?? '')}`).join('\n'));
  if (inHeaders) return cut(inHeaders);
  res.writeHead(answer.statusCode ?? 502, answerHeaders(answer.headers));
  const window = scanner.stream();
  let pending: Buffer = Buffer.alloc(0);
  const out = res as http.ServerResponse;
  answer.on('data', (chunk: Buffer) => {
    const hit = window.push(chunk);
    if (hit) return cut(hit);
    pending = pending.length ? Buffer.concat([pending, chunk]) : chunk;
    if (pending.length <= hold) return;
    const ready = pending.subarray(0, pending.length - hold);
    pending = Buffer.from(pending.subarray(pending.length - hold));
    if (!out.write(ready)) {
      answer.pause();
      out.once('drain', () => answer.resume());
    }
  });
  answer.on('end', () => out.end(pending));
}

/** The line a step reads when its request could not reach the host: a certificate that did not verify says which and how to trust it. */
export function upstreamProblem(host: string, err: NodeJS.ErrnoException): string {
  const code = err.code ?? '';
  if (/CERT|SELF_SIGNED|UNABLE_TO|ERR_TLS_CERT_ALTNAME|HOSTNAME/.test(code) || /certificate/i.test(err.message)) {
    return `runner gateway: the certificate of ${host} did not verify (${err.message}): the gateway trusts Node's roots and the runner's --ca-file only, and sends nothing to a host it cannot verify\n`;
  }
  if (code === 'EFORBIDDEN') return `runner gateway: ${err.message}\n`;
  return `runner gateway: ${host} did not answer (${err.message})\n`;
}
