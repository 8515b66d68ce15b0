/**
 * The gateway's inspection: which hosts it reads (those with a rule, or every
 * allowed one with `inspect: all`), the TLS it terminates for them (a tunnel
 * whose ClientHello passed the usual check is handed to a TLS server of its
 * own, HTTP/2 and HTTP/1.1, presenting a leaf of the run's CA for that host
 * only), and where each request then goes (inspected-request.ts judges it;
 * inspected-upstream.ts sends it on).
 */
import type http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { Duplex } from 'node:stream';
import type { GatewayEvent, Inspection } from './config.js';
import type { Egress } from './egress.js';
import { handleInspected, type InspectContext, type Opener } from './inspected-request.js';
import { Upstreams } from './inspected-upstream.js';
import { ruleFor } from './request-rules.js';
import type { RunCa } from './run-ca.js';
import { ByteBudget, SecretScanner } from './secret-scan.js';

/** what every request body held at once may take, all requests together */
export const HELD_BYTES = 64 * 1024 * 1024;

export class Inspector {
  readonly context: InspectContext;
  readonly upstreams: Upstreams;

  constructor(
    readonly inspect: Inspection,
    readonly ca: RunCa,
    egress: Egress,
    /** the roots an upstream's certificate is checked against (withRoots); absent, Node's own */
    roots: string[] | undefined,
    emit: (e: GatewayEvent) => void,
    budget = new ByteBudget(HELD_BYTES),
  ) {
    this.context = { inspect, scanner: new SecretScanner(inspect.secrets), budget, refusals: egress.refusals, emit, told: { count: 0 } };
    this.upstreams = new Upstreams(egress, roots);
  }

  /** Whether a tunnel to this (allowed) host is terminated and read, rather than passed through. */
  reads(host: string): boolean {
    return this.inspect.all === true || ruleFor(this.inspect.hosts, host.toLowerCase()) !== undefined;
  }

  /**
   * A tunnel to `host:port` whose ClientHello (`hello`, already read and
   * checked to name the host) goes to a TLS server of the gateway's: its
   * requests are read one by one.
   */
  terminate(client: Duplex, hello: Buffer, host: string, port: number): void {
    const name = host.toLowerCase().replace(/\.$/, '');
    const hostHeader = port === 443 ? name : `${name}:${port}`;
    const server = http2.createSecureServer(
      {
        allowHTTP1: true,
        // one step's tunnel: bounded streams and memory per session (Node's defaults are generous)
        settings: { maxConcurrentStreams: 100 },
        maxSessionMemory: 32,
        SNICallback: (servername, done) => {
          // checked before (client-hello.ts), and again here: this server presents one host's leaf, no other
          if (servername.toLowerCase().replace(/\.$/, '') !== name) return done(new Error(`a ClientHello for ${servername.slice(0, 100)} in a tunnel opened for ${name}`), null as never);
          this.ca.contextFor(name).then((ctx) => done(null, ctx), (err: Error) => done(err, null as never));
        },
      },
      (req, res) => {
        const open: Opener = (o, onAnswer) => https.request({ agent: this.upstreams.agentFor(name, port), host: name, port, method: o.method, path: o.path, headers: o.headers }, onAnswer);
        handleInspected(this.context, req, res, { host: name, port, hostHeader, rawTarget: req.url ?? '/' }, open);
      },
    );
    // a client that hangs up, or does not trust the run's CA, is no error of the gateway's
    server.on('tlsClientError', () => client.destroy());
    server.on('sessionError', () => undefined);
    server.on('error', () => undefined);
    client.unshift(hello);
    server.emit('connection', client);
  }

  /** A plain-HTTP request (absolute form) to an allowed host: read as an inspected one, then sent with `open`; refused to a host with a credential. */
  plain(req: http.IncomingMessage, res: http.ServerResponse, url: URL, open: Opener): void {
    const host = url.hostname.toLowerCase().replace(/\.$/, '');
    // a credential goes out over verified TLS only: in clear text anyone on the way (or a forged answer to the name) would read it
    const credential = ruleFor(this.inspect.hosts, host)?.credential;
    if (credential) {
      const why = `plain HTTP to a host with a credential (${credential.name}), which the gateway adds over HTTPS only`;
      this.context.refusals.note(host, why);
      const text = `runner gateway: ${host} refused (${why}); ask for https://${url.host}${originForm(req.url ?? '/').slice(0, 200)} instead\n`;
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text), connection: 'close' });
      res.end(text);
      req.resume();
      return;
    }
    handleInspected(this.context, req, res, { host, port: Number(url.port || 80), hostHeader: url.host, rawTarget: originForm(req.url ?? '/') }, open);
  }

  close(): void {
    this.upstreams.close();
  }
}

/** The target of an absolute-form request as the step wrote it, after its scheme and authority (what normalizeTarget judges). Pure. */
export function originForm(absolute: string): string {
  const rest = absolute.slice(absolute.indexOf('//') + 2);
  const at = rest.search(/[/?]/);
  if (at === -1) return '/';
  return rest[at] === '?' ? `/${rest.slice(at)}` : rest.slice(at);
}
