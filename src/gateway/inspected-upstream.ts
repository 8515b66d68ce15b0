/**
 * Where an inspected request goes: HTTPS to the real host, its certificate
 * fully verified (Node's roots and the runner's CA bundle, the host's name),
 * over HTTP/1.1 with keep-alive, one agent per host and port. Each of the
 * agent's connections is opened the way a tunnel's is (egress.ts
 * openUpstream): to an address the policy allows, or through the company's
 * proxy.
 */
import https from 'node:https';
import type net from 'node:net';
import tls from 'node:tls';
import { openUpstream, type Egress } from './egress.js';

/** agents kept (one per host and port); past them the oldest is closed */
const MAX_AGENTS = 200;
/** connections to one host at once, and kept idle */
const MAX_SOCKETS = 64;
const MAX_FREE = 8;

export class Upstreams {
  private readonly agents = new Map<string, https.Agent>();

  /** `ca`: the roots a host's certificate is checked against (withRoots); absent, Node's own */
  constructor(
    private readonly egress: Egress,
    private readonly ca: string[] | undefined,
  ) {}

  agentFor(host: string, port: number): https.Agent {
    const key = `${host}:${port}`;
    let agent = this.agents.get(key);
    if (agent) return agent;
    if (this.agents.size >= MAX_AGENTS) {
      const [oldest, a] = this.agents.entries().next().value!;
      this.agents.delete(oldest);
      a.destroy();
    }
    agent = new https.Agent({ keepAlive: true, maxSockets: MAX_SOCKETS, maxFreeSockets: MAX_FREE, scheduling: 'lifo' });
    // each connection: opened where the policy allows (or through the proxy), then TLS checked against the host's name
    agent.createConnection = ((_options: unknown, done: (err: Error | null, socket?: net.Socket) => void) => {
      openUpstream(this.egress, host, port).then(
        (socket) => done(null, tls.connect({ socket, host, servername: host, ALPNProtocols: ['http/1.1'], ...(this.ca ? { ca: this.ca } : {}) })),
        (err: Error) => done(err),
      );
      return undefined;
    }) as unknown as typeof agent.createConnection;
    this.agents.set(key, agent);
    return agent;
  }

  close(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
  }
}
