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
import { portsFor } from './hosts.js';

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

export interface Egress {
  allow: string[];
  refusals: Refusals;
  /** where an allowed name may lead: never this machine, a private range only when allowed */
  policy: AddressPolicy;
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
      if (!ok.length) {
        const why = addresses.map((a) => `${a.address}: ${addressProblem(a.address, policy)}`).join('; ');
        const refused = Object.assign(new Error(`${host} leads where a step may not go (${why})`), { code: 'EFORBIDDEN' });
        return callback(refused, '', 0);
      }
      if (options.all) callback(null, ok);
      else callback(null, ok[0]!.address, ok[0]!.family);
    });
  }) as unknown as net.LookupFunction;
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
function upstreamFailure(e: Egress, host: string, err: NodeJS.ErrnoException): string {
  if (err.code !== 'EFORBIDDEN') return `runner gateway: ${host} did not answer (${err.message})\n`;
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
  const up = http.request({ host, port, path: url.pathname + url.search, method: req.method, headers, lookup: checkedLookup(e.policy) }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  up.on('error', (err: NodeJS.ErrnoException) => {
    if (!res.headersSent) {
      res.writeHead(err.code === 'EFORBIDDEN' ? 403 : 502, { 'content-type': 'text/plain' });
      res.end(upstreamFailure(e, host, err));
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
  let opened = false;
  const up = net.connect({ port, host, lookup: checkedLookup(e.policy) }, () => {
    opened = true;
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    readHello(client, head, host, (hello, why) => {
      doneWaiting();
      if (why) {
        e.refusals.note(host, why);
        client.destroy();
        up.destroy();
        return;
      }
      up.write(hello);
      up.pipe(client);
      client.pipe(up);
    });
  });
  up.on('error', (err: NodeJS.ErrnoException) => {
    // before the tunnel opened the client hears why; after, its connection just ends
    if (!opened && client.writable) refuse(e, client, host, upstreamFailure(e, host, err).trim(), err.code === 'EFORBIDDEN' ? 403 : 502, false);
    else client.destroy();
  });
  client.on('close', () => up.destroy());
  up.on('close', () => client.destroy());
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
