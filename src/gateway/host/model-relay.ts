/**
 * The way a step's gateway reaches a model on the runner's machine (Ollama on
 * 127.0.0.1:11434): in its container, 127.0.0.1 is the gateway itself, and the
 * step must never reach the host. So the runner, a process on the host, opens
 * for the time of the step a relay of its own to the model's address alone:
 * on the egress network's address of this machine (where the gateway's
 * container reaches the host, and nothing outside it does), serving only the
 * gateway's own address on that network, and only requests whose path starts
 * with a secret made for the step, which the gateway holds in its config (on
 * its standard input) and the step never sees. The gateway's model route
 * points there; the step still reaches its gateway alone, and the gateway
 * passes model calls only. A model that does not answer is said as its
 * address not answering, at once.
 */
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import type { HostModel } from '../../plan/host-model.js';

/** How long the model has to accept a connection (the probe at the step's start, each call's connection). */
export const CONNECT_MS = 5_000;
/** How long a call waits for the gateway's address to be known (it is, a moment after the gateway listens). */
const ADMIT_MS = 15_000;
/** A model that refused every connection for this long while its step runs: the step is stopped, saying so. */
export const DOWN_MS = 30_000;

/** Headers of one hop: never passed on. */
const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'host']);

/** Why a connection failed, in words: "connection refused". Pure. */
export function whyNoAnswer(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ETIMEDOUT' || code === 'timeout') return `no answer within ${CONNECT_MS / 1000} s`;
  if (code === 'ECONNRESET') return 'connection reset';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'its name does not resolve';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'unreachable';
  return code ?? (err instanceof Error ? err.message : String(err));
}

/** "the model at http://127.0.0.1:11434 does not answer (connection refused)". Pure. */
export function noAnswer(model: Pick<HostModel, 'shown'>, why: string): string {
  return `the model at ${model.shown} does not answer (${why})`;
}

/** Whether the model accepts a connection: undefined when it does, else why not ("connection refused"). */
export function probeModel(model: Pick<HostModel, 'host' | 'port'>, ms = CONNECT_MS): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: model.host, port: model.port });
    const done = (why: string | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(why);
    };
    const timer = setTimeout(() => done(whyNoAnswer({ code: 'timeout' })), ms);
    socket.once('connect', () => done(undefined));
    socket.once('error', (err) => done(whyNoAnswer(err)));
  });
}

/** The path a request has at the model: without the relay's secret; undefined when it does not carry it. Pure. */
export function pathAtModel(secret: string, path: string): string | undefined {
  const prefix = `/${secret}`;
  if (path === prefix) return '/';
  if (!path.startsWith(`${prefix}/`) && !path.startsWith(`${prefix}?`)) return undefined;
  const rest = path.slice(prefix.length);
  return rest.startsWith('?') ? `/${rest}` : rest;
}

export interface ModelRelay {
  /** the model route's upstream, as the gateway is given it: the relay, its secret, the base_url's path */
  upstream: string;
  /** where it listens */
  host: string;
  port: number;
  /** serve connections from this address (the gateway's on the egress network) and no other */
  admit(address: string): void;
  /** what went wrong with the model while the step ran, said once each (for the step's record) */
  problems(): string[];
  close(): Promise<void>;
}

export interface RelayOptions {
  /** this machine's address on the egress network: where the gateway's container reaches it */
  bind: string;
  model: HostModel;
  /** the model did not answer a call: said at once (the step's log) */
  onProblem(message: string): void;
  /** the model refused every connection for DOWN_MS: the step is stopped */
  onDown(message: string): void;
  /** DOWN_MS, unless told */
  downMs?: number;
}

/** Opens the relay; throws when it cannot listen on `bind` (the runner is not on the engine's machine). */
export async function openModelRelay(o: RelayOptions): Promise<ModelRelay> {
  const secret = randomBytes(24).toString('base64url');
  let admit: (address: string) => void = () => undefined;
  const admitted = new Promise<string>((r) => (admit = r));
  const said = new Set<string>();
  let downSince: number | undefined;
  let downTold = false;
  const client = o.model.protocol === 'https:' ? https : http;
  const agent = new client.Agent({ keepAlive: true, maxSockets: 32 });
  const server = http.createServer((req, res) => {
    const from = req.socket.remoteAddress?.replace(/^::ffff:/i, '');
    const path = pathAtModel(secret, req.url ?? '/');
    if (path === undefined) return void req.socket.destroy();
    // the gateway's address is known a moment after it listens: a first call may wait for it (not long)
    let timer: NodeJS.Timeout | undefined;
    void Promise.race([admitted, new Promise<undefined>((r) => (timer = setTimeout(() => r(undefined), ADMIT_MS)))]).then((gateway) => {
      clearTimeout(timer);
      // anyone else on the egress network, or a request without the step's secret: nothing, not even an answer
      if (gateway === undefined || from !== gateway) return void req.socket.destroy();
      pass(req, res, path);
    });
  });
  const pass = (req: http.IncomingMessage, res: http.ServerResponse, path: string) => {
    const headers: http.OutgoingHttpHeaders = { host: o.model.port === (o.model.protocol === 'https:' ? 443 : 80) ? o.model.host : `${o.model.host}:${o.model.port}` };
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
    const up = client.request({ host: o.model.host, port: o.model.port, method: req.method, path, headers, agent }, (answer) => {
      downSince = undefined;
      const back: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(answer.headers)) if (!HOP.has(k) && v !== undefined) back[k] = v;
      res.writeHead(answer.statusCode ?? 502, back);
      answer.pipe(res);
      answer.on('error', () => res.destroy());
    });
    // a bound on the connection alone: a slow generation, once the model took the call, is not cut
    up.once('socket', (s) => {
      if (!s.connecting) return;
      const timer = setTimeout(() => up.destroy(Object.assign(new Error('timeout'), { code: 'timeout' })), CONNECT_MS);
      s.once('connect', () => clearTimeout(timer));
      s.once('close', () => clearTimeout(timer));
    });
    let gone = false;
    up.on('error', (err) => {
      // the gateway hung up first (its step ended, a call abandoned): nothing the model did
      if (gone) return;
      const message = noAnswer(o.model, whyNoAnswer(err));
      if (!said.has(message) && said.size < 16) {
        said.add(message);
        o.onProblem(message);
      }
      if ((err as NodeJS.ErrnoException).code === 'ECONNREFUSED') {
        downSince ??= Date.now();
        if (!downTold && Date.now() - downSince >= (o.downMs ?? DOWN_MS)) {
          downTold = true;
          o.onDown(`${message} for ${Math.round((Date.now() - downSince) / 1000)} s`);
        }
      }
      if (res.headersSent) return void res.destroy();
      const body = JSON.stringify({ type: 'error', error: { type: 'api_error', message: `runner: ${message}` } });
      res.writeHead(502, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    req.on('error', () => up.destroy());
    res.on('close', () => {
      if (res.writableFinished) return;
      gone = true;
      up.destroy();
    });
    req.pipe(up);
  };
  // no timeout of the server's own on a long generation
  server.requestTimeout = 0;
  server.headersTimeout = 60_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, o.bind, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as net.AddressInfo).port;
  const host = o.bind.includes(':') ? `[${o.bind}]` : o.bind;
  return {
    upstream: `http://${host}:${port}/${secret}${o.model.path}`,
    host: o.bind,
    port,
    admit: (address) => admit(address),
    problems: () => [...said],
    close: async () => {
      server.closeAllConnections();
      agent.destroy();
      await new Promise<void>((r) => server.close(() => r()));
    },
  };
}
