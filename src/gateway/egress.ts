/**
 * The step's way out: a forward proxy for plain HTTP (absolute-form requests)
 * and HTTPS (CONNECT tunnels, not inspected), to allowed hosts only. Anything
 * else is refused with a 403 that says how to allow it, and reported once per
 * host (counted after that, within a bound).
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { allows } from './hosts.js';

const MAX_HOSTS = 200;

export class Refusals {
  readonly hosts = new Map<string, number>();
  others = 0;

  constructor(private readonly onFirst: (host: string, reason: string) => void) {}

  note(host: string, reason: string): void {
    const h = host.slice(0, 255);
    const n = this.hosts.get(h);
    if (n !== undefined) this.hosts.set(h, n + 1);
    else if (this.hosts.size >= MAX_HOSTS) this.others++;
    else {
      this.hosts.set(h, 1);
      this.onFirst(h, reason);
    }
  }
}

export interface Egress {
  allow: string[];
  refusals: Refusals;
}

/** Addresses an allowed name must not lead to: this machine, link-local (cloud metadata), unspecified, multicast. Pure. */
export function forbiddenAddress(ip: string): boolean {
  const v4 = ip.replace(/^::ffff:/i, '');
  if (net.isIPv4(v4)) {
    const [a, b] = v4.split('.').map(Number) as [number, number];
    return a === 127 || a === 0 || (a === 169 && b === 254) || a >= 224;
  }
  const v6 = ip.toLowerCase();
  return v6 === '::1' || v6 === '::' || /^fe[89ab]/.test(v6) || v6.startsWith('ff');
}

/** dns.lookup, without the forbidden addresses (none left: refused): the connection goes to an address checked. */
const checkedLookup = ((host: string, options: dns.LookupOptions, callback: (err: NodeJS.ErrnoException | null, address: string | dns.LookupAddress[], family?: number) => void) => {
  dns.lookup(host, { ...options, all: true }, (err, addresses) => {
    if (err) return callback(err, '', 0);
    const ok = addresses.filter((a) => !forbiddenAddress(a.address));
    if (!ok.length) {
      const refused = Object.assign(new Error(`${host} resolves to ${addresses.map((a) => a.address).join(', ')}, which a step may not reach`), { code: 'EFORBIDDEN' });
      return callback(refused, '', 0);
    }
    if (options.all) callback(null, ok);
    else callback(null, ok[0]!.address, ok[0]!.family);
  });
}) as unknown as net.LookupFunction;

function whyNot(e: Egress, host: string): string | undefined {
  if (net.isIP(host.replace(/^\[|\]$/g, ''))) return 'an IP address, not a host name';
  if (!allows(e.allow, host)) return 'not in the step\'s egress list';
  return undefined;
}

function refusalText(host: string, reason: string): string {
  return `runner gateway: ${host} refused (${reason}); to allow it, add it to the step's egress: list in the pipeline file\n`;
}

/** An absolute-form request (`GET http://host/path`) to an allowed host, forwarded. */
export function forwardHttp(e: Egress, req: http.IncomingMessage, res: http.ServerResponse, url: URL): void {
  const host = url.hostname;
  const no = url.protocol !== 'http:' ? `${url.protocol} through a plain request (use CONNECT)` : whyNot(e, host);
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
  const up = http.request({ host, port: url.port || 80, path: url.pathname + url.search, method: req.method, headers, lookup: checkedLookup }, (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
  });
  up.on('error', (err) => {
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(`runner gateway: ${host} did not answer (${err.message})\n`);
    } else res.destroy();
  });
  res.on('close', () => up.destroy());
  req.on('error', () => up.destroy());
  req.pipe(up);
}

/** `CONNECT host:port`: a tunnel to an allowed host, bytes both ways. */
export function tunnel(e: Egress, req: http.IncomingMessage, client: Duplex, head: Buffer): void {
  // a client that hangs up mid-answer is no error of the gateway's
  client.on('error', () => undefined);
  const m = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(req.url ?? '');
  const host = m?.[1] ?? (req.url ?? '').slice(0, 255);
  const port = Number(m?.[2]);
  const no = !m ? 'not host:port' : port < 1 || port > 65535 ? 'not a port' : whyNot(e, host);
  if (no) {
    e.refusals.note(host, no);
    const body = refusalText(host, no);
    client.end(`HTTP/1.1 403 Forbidden\r\ncontent-type: text/plain\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
    return;
  }
  const up = net.connect({ port, host, lookup: checkedLookup }, () => {
    client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
    if (head.length) up.write(head);
    up.pipe(client);
    client.pipe(up);
  });
  up.on('error', (err) => {
    if (client.writable) client.end(`HTTP/1.1 502 Bad Gateway\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\nrunner gateway: ${host} did not answer (${err.message})\n`);
  });
  client.on('error', () => up.destroy());
  client.on('close', () => up.destroy());
  up.on('close', () => client.destroy());
}
