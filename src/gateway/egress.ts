/**
 * The step's way out: a forward proxy for plain HTTP (absolute-form requests)
 * and TLS (CONNECT tunnels, whose ClientHello must name the tunnel's host;
 * the rest is not inspected), to allowed hosts and ports only, and only where
 * their names lead to an address a step may reach. Anything else is refused
 * with a 403 that says how to allow it, and reported once per host (counted
 * after that, within a bound).
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { addressProblem, type AddressPolicy } from './address-policy.js';
import { helloProblem, readClientHello } from './client-hello.js';
import type { Inspector } from './inspected.js';
import { portsFor } from './hosts.js';
import type { TrustProbe } from './trust-probe.js';
import { bypassesProxy, connectThrough, type UpstreamProxy } from './upstream-proxy.js';

const MAX_HOSTS = 200;

export class Refusals {
  readonly hosts = new Map<string, number>();
  others = 0;
  /** host and reason pairs said: each said once (a tunnel refused for its port, then for its hello, says both) */
  private readonly said = new Set<string>();

  constructor(private readonly onFirst: (host: string, reason: string) => void) {}

  note(host: string, reason: string): void {
    const h = host.slice(0, 255);
    const n = this.hosts.get(h);
    if (n !== undefined) this.hosts.set(h, n + 1);
    else if (this.hosts.size >= MAX_HOSTS) return void this.others++;
    else this.hosts.set(h, 1);
    const key = `${h}\n${reason}`;
    if (this.said.size < MAX_HOSTS * 2 && !this.said.has(key)) {
      this.said.add(key);
      this.onFirst(h, reason);
    }
  }
}

/**
 * Allowed hosts the gateway could not reach (a name that does not resolve, a connection refused or timed out): said
 * once per host and port, at the first failure, so a step whose tools retry in silence (npm, pip) is told why in
 * its log at once, not minutes later. Bounded like the refusals.
 */
export class Unreachable {
  private readonly said = new Set<string>();

  constructor(private readonly onFirst: (host: string, port: number, reason: string) => void) {}

  note(host: string, port: number, err: NodeJS.ErrnoException): void {
    const key = `${host.slice(0, 255)}:${port}`;
    if (this.said.has(key) || this.said.size >= MAX_HOSTS) return;
    this.said.add(key);
    this.onFirst(host.slice(0, 255), port, String(err.code ?? err.message).slice(0, 200));
  }
}

export interface Egress {
  allow: string[];
  refusals: Refusals;
  /** allowed hosts that did not answer, each said once */
  unreachable?: Unreachable | undefined;
  /** where an allowed name may lead: never this machine, a private range only when allowed */
  policy: AddressPolicy;
  /** the company's proxy the gateway reaches out through (NO_PROXY's names go direct) */
  proxy?: UpstreamProxy | undefined;
  /** the hosts whose requests the gateway reads (TLS terminated), and the secret checks on plain HTTP; absent, every host is a tunnel */
  inspector?: Inspector | undefined;
  /** checks each allowed host's certificate once against what the step trusts, to say at once why its TLS will fail */
  probe?: TrustProbe | undefined;
}

/** How long a tunnel's client has to send its ClientHello once the tunnel is open. */
const HELLO_MS = 10_000;
/** Tunnels waiting for their ClientHello at once (each may hold up to 64 KiB of it): past them, refused. */
const MAX_HELLOS_WAITING = 64;
let hellosWaiting = 0;

/**
 * dns.lookup keeping only the addresses a step may reach (none left: refused
 * with the reason), so the connection goes to an address checked, with no
 * second lookup between the check and the connect.
 */
function checkedLookup(policy: AddressPolicy): net.LookupFunction {
  return ((host: string, options: dns.LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void) => {
    dns.lookup(host, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, '', 0);
      const ok = addresses.filter((a) => addressProblem(a.address, policy) === undefined);
      if (!ok.length) return callback(forbidden(host, addresses.map((a) => `${a.address}: ${addressProblem(a.address, policy)}`).join('; ')), '', 0);
      if (options.all) callback(null, ok);
      else callback(null, ok[0]!.address, ok[0]!.family);
    });
  }) as unknown as net.LookupFunction;
}

const forbidden = (host: string, why: string) => Object.assign(new Error(`${host} leads where a step may not go (${why})`), { code: 'EFORBIDDEN' });

/**
 * Behind a proxy, the proxy resolves the name and connects. Where the gateway
 * can resolve it too, the name must lead somewhere a step may go, as without
 * a proxy; a name only the proxy can resolve is the proxy's to judge.
 */
function checkBeforeProxy(policy: AddressPolicy, host: string): Promise<void> {
  return new Promise((resolve, reject) => {
    dns.lookup(host, { all: true }, (err, addresses) => {
      if (err || !addresses.length) return resolve();
      const why = beforeProxyProblem(addresses.map((a) => a.address), policy);
      if (why) reject(forbidden(host, why));
      else resolve();
    });
  });
}

/**
 * Why a name with these addresses may not go to the proxy, or undefined. Every
 * address must be one a step may reach: the proxy picks among them, not the
 * gateway (a name leading to a public and a private address would otherwise
 * reach the private one through the proxy). Pure.
 */
export function beforeProxyProblem(addresses: readonly string[], policy: AddressPolicy): string | undefined {
  const bad = addresses.map((a) => ({ a, why: addressProblem(a, policy) })).filter((x) => x.why !== undefined);
  return bad.length ? bad.map((x) => `${x.a}: ${x.why}`).join('; ') : undefined;
}

/** The proxy a connection to host:port goes through, if any. */
function proxyFor(e: Egress, host: string, port: number): UpstreamProxy | undefined {
  return e.proxy && !bypassesProxy(e.proxy.noProxy, host, port) ? e.proxy : undefined;
}

/** A TCP connection to an allowed host: direct (to an address checked), or through the company's proxy. */
export function openUpstream(e: Egress, host: string, port: number): Promise<net.Socket> {
  const proxy = proxyFor(e, host, port);
  if (proxy) return checkBeforeProxy(e.policy, host).then(() => connectThrough(proxy, host, port));
  return new Promise((resolve, reject) => {
    const up = net.connect({ port, host, lookup: checkedLookup(e.policy) }, () => {
      up.off('error', reject);
      resolve(up);
    });
    up.on('error', reject);
  });
}

function whyNot(e: Egress, host: string, port: number, way: 'http' | 'tls'): string | undefined {
  if (net.isIP(host.replace(/^\[|\]$/g, ''))) return 'an IP address, not a host name';
  const ports = portsFor(e.allow, host);
  if (!ports) return "not in the step's egress list";
  if (!ports[way].has(port)) {
    const allowed = [...ports[way]].sort((a, b) => a - b).join(', ');
    return `port ${port} is not allowed for ${way === 'tls' ? 'a tunnel' : 'plain HTTP'} to it (allowed: ${allowed}; name another as ${host}:${port} in egress:)`;
  }
  return undefined;
}

function refusalText(host: string, reason: string): string {
  return `runner gateway: ${host} refused (${reason}); to allow it, add it to the step's egress: list in the pipeline file\n`;
}

/** The answer when the way to an allowed host failed: refused (it leads to this machine, a private address) or unreachable. */
function upstreamFailure(e: Egress, host: string, port: number, err: NodeJS.ErrnoException): string {
  if (err.code !== 'EFORBIDDEN') {
    e.unreachable?.note(host, port, err);
    return `runner gateway: ${host} did not answer (${err.message})\n`;
  }
  const reason = err.message.replace(/^\S+ /, '');
  e.refusals.note(host, reason);
  return `runner gateway: ${host} refused (${reason})\n`;
}

/** An absolute-form request (`GET http://host/path`) to an allowed host, forwarded. */
export function forwardHttp(e: Egress, req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
  const host = url.hostname;
  const port = Number(url.port || 80);
  const no = url.protocol !== 'http:' ? `${url.protocol} through a plain request (use CONNECT)` : whyNot(e, host, port, 'http');
  if (no) {
    e.refusals.note(host, no);
    res.writeHead(403, { 'content-type': 'text/plain' });
    res.end(refusalText(host, no));
    req.resume();
    return;
  }
  const headers = { ...req.headers };
  delete headers['proxy-authorization'];
  delete headers['proxy-connection'];
  // the host checked is the host asked: a Host header naming another site does not go along
  headers.host = url.host;
  const proxy = proxyFor(e, host, port);
  if (proxy?.authorization) headers['proxy-authorization'] = proxy.authorization;
  // behind a proxy the request goes to it in absolute form, as the step sent it; the proxy resolves the name
  const where = proxy
    ? { host: proxy.host, port: proxy.port, path: url.href }
    : { host, port, path: url.pathname + url.search, lookup: checkedLookup(e.policy) };
  const checked = proxy ? checkBeforeProxy(e.policy, host) : Promise.resolve();
  checked.then(
    () => {
      if (!e.inspector) return sendHttp(e, req, res, host, port, { ...where, method: req.method, headers });
      // read as an inspected request: the rule (if the host has one), secret checks, the credential
      e.inspector.plain(req, res, url, (o, onAnswer) => {
        const h = proxy?.authorization ? { ...o.headers, 'proxy-authorization': proxy.authorization } : o.headers;
        const options = proxy ? { ...where, path: `http://${url.host}${o.path}` } : { ...where, path: o.path };
        return http.request({ ...options, method: o.method, headers: h }, onAnswer);
      });
    },
    (err: NodeJS.ErrnoException) => {
      res.writeHead(403, { 'content-type': 'text/plain' });
      res.end(upstreamFailure(e, host, port, err));
      req.resume();
    },
  );
}

function sendHttp(e: Egress, req: http.IncomingMessage, res: http.ServerResponse, host: string, port: number, options: http.RequestOptions): void {
  // the step hung up while its name was looked up
  if (res.destroyed || res.writableEnded) return void req.resume();
  const up = http.request(options, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  up.on('error', (err: NodeJS.ErrnoException) => {
    if (!res.headersSent) {
      res.writeHead(err.code === 'EFORBIDDEN' ? 403 : 502, { 'content-type': 'text/plain' });
      res.end(upstreamFailure(e, host, port, err));
    } else res.destroy();
  });
  res.on('close', () => up.destroy());
  req.on('error', () => up.destroy());
  req.pipe(up);
}

/**
 * `CONNECT host:port`: a tunnel to an allowed host and port that carries TLS
 * to that host only. Its first bytes must be a ClientHello whose server name
 * is the host; they are read before any byte goes on, and anything else
 * closes the tunnel.
 */
export function tunnel(e: Egress, req: http.IncomingMessage, client: Duplex, head: Buffer): void {
  // a client that hangs up mid-answer is no error of the gateway's
  client.on('error', () => undefined);
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
  const host = m?.[1] ?? (req.url ?? '').slice(0, 255);
  const port = Number(m?.[2]);
  const no = !m ? 'not host:port' : port < 1 || port > 65535 ? 'not a port' : whyNot(e, host, port, 'tls');
  if (no) return refuse(e, client, host, no, 403);
  e.probe?.check(host, port, () => openUpstream(e, host, port));
  if (hellosWaiting >= MAX_HELLOS_WAITING) {
    const body = `runner gateway: more than ${MAX_HELLOS_WAITING} tunnels are waiting for their ClientHello; try again\n`;
    client.end(`HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n${body}`);
    return;
  }
  hellosWaiting++;
  let waiting = true;
  const doneWaiting = () => {
    if (waiting) hellosWaiting--;
    waiting = false;
  };
  client.on('close', doneWaiting);
  if (e.inspector?.reads(host)) return inspectedTunnel(e, e.inspector, client, head, host, port, doneWaiting);
  let up: net.Socket | undefined;
  let closed = false;
  client.on('close', () => {
    closed = true;
    up?.destroy();
  });
  openUpstream(e, host, port).then(
    (socket) => {
      up = socket;
      if (closed) return socket.destroy();
      // after the tunnel opened, a failure just ends the client's connection
      socket.on('error', () => client.destroy());
      socket.on('close', () => client.destroy());
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      readHello(client, head, host, (hello, why) => {
        doneWaiting();
        if (why) {
          e.refusals.note(host, why);
          client.destroy();
          socket.destroy();
          return;
        }
        socket.write(hello);
        socket.pipe(client);
        client.pipe(socket);
        socket.resume();
      });
    },
    (err: NodeJS.ErrnoException) => {
      // before the tunnel opened the client hears why
      if (client.writable) refuse(e, client, host, upstreamFailure(e, host, port, err).trim(), err.code === 'EFORBIDDEN' ? 403 : 502, false);
      else client.destroy();
    },
  );
}

/**
 * A tunnel to a host the gateway reads: opened at once (each request then
 * reaches the host on its own, and says so when it cannot), its ClientHello
 * checked as any tunnel's, then its TLS terminated by the gateway.
 */
function inspectedTunnel(e: Egress, inspector: Inspector, client: Duplex, head: Buffer, host: string, port: number, doneWaiting: () => void): void {
  client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
  readHello(client, head, host, (hello, why) => {
    doneWaiting();
    if (why) {
      e.refusals.note(host, why);
      return void client.destroy();
    }
    inspector.terminate(client, hello, host, port);
  });
}

function refuse(e: Egress, client: Duplex, host: string, reason: string, status: 403 | 502, note = true): void {
  if (note) e.refusals.note(host, reason);
  const body = status === 403 && note ? refusalText(host, reason) : `${reason}\n`;
  client.end(`HTTP/1.1 ${status} ${status === 403 ? 'Forbidden' : 'Bad Gateway'}\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/** Gathers the client's first bytes until they make a ClientHello (or cannot), then says what they were. */
function readHello(client: Duplex, head: Buffer, host: string, done: (hello: Buffer, why?: string) => void): void {
  let got = head;
  let settled = false;
  const finish = (why?: string) => {
    if (settled) return;
    settled = true;
    clearTimeout(timer);
    client.off('data', onData);
    client.off('end', onEnd);
    client.pause();
    done(got, why);
  };
  const check = () => {
    const read = readClientHello(got);
    if (read.kind === 'refuse') finish(read.why);
    else if (read.kind === 'hello') finish(helloProblem(read, host));
  };
  const onData = (chunk: Buffer) => {
    got = Buffer.concat([got, chunk]);
    check();
  };
  const onEnd = () => finish('the client closed the tunnel before a ClientHello');
  const timer = setTimeout(() => finish(`no ClientHello within ${HELLO_MS / 1000} s`), HELLO_MS);
  client.on('data', onData);
  client.on('end', onEnd);
  check();
}
