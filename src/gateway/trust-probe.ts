/**
 * Why a step's TLS to an allowed host will fail, found at once rather than
 * after its tools retried in silence: the first time a step asks for a host
 * and port (a tunnel, or the model's API), the gateway makes a handshake of
 * its own there, the way the step's is made (through the company's proxy
 * when there is one), checked against what the step trusts. A certificate
 * that does not verify is said once (an `untrusted` event), with whether the
 * host's own bundle would have trusted it: a TLS-inspecting proxy whose root
 * the host has and the step was not given. Nothing is sent but a
 * ClientHello; what the step sends is never held back by this.
 */
import type net from 'node:net';
import tls, { type DetailedPeerCertificate } from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { anchorOf, certificatesOf, topIssuer, UNKNOWN_CA_REASONS } from './chain-anchor.js';
import type { UntrustedEvent } from './config.js';

/** distinct hosts and ports probed at most, per gateway (a step's `*.` entry may name many) */
export const MAX_PROBES = 64;
/** a probe that takes longer says nothing: the step's own connection will */
const PROBE_MS = 10_000;

export interface ProbeOptions {
  /** the roots the step trusts, as the TLS stack takes them (withRoots of its bundle, or Node's own) */
  roots: readonly string[];
  /** the host's own bundle, when the step does not trust it: checked against, never trusted */
  hostCa?: string | undefined;
  emit(e: UntrustedEvent): void;
  timeoutMs?: number;
}

export class TrustProbe {
  private readonly asked = new Set<string>();
  private hostRoots: X509Certificate[] | undefined;

  constructor(private readonly o: ProbeOptions) {}

  /** Probes host:port once (later asks are no-ops), opening the connection with `open`. */
  check(host: string, port: number, open: () => Promise<net.Socket>): void {
    const name = host.toLowerCase().replace(/\.$/, '');
    const key = `${name}:${port}`;
    if (this.asked.has(key) || this.asked.size >= MAX_PROBES) return;
    this.asked.add(key);
    this.probe(name, port, open).then(
      (e) => e && this.o.emit(e),
      () => undefined,
    );
  }

  private async probe(host: string, port: number, open: () => Promise<net.Socket>): Promise<UntrustedEvent | undefined> {
    const seen = await handshake(open, host, this.o.roots, this.o.timeoutMs ?? PROBE_MS);
    if (!seen || seen.authorized) return undefined;
    return { event: 'untrusted', host, port, reason: seen.reason, issuer: topIssuer(seen.chain), hostTrusts: this.hostTrusts(seen.reason, seen.chain) };
  }

  private hostTrusts(reason: string, chain: X509Certificate[]): boolean {
    if (!this.o.hostCa || !UNKNOWN_CA_REASONS.has(reason)) return false;
    this.hostRoots ??= certificatesOf(this.o.hostCa);
    return anchorOf(chain, this.hostRoots) !== undefined;
  }
}

interface Seen {
  authorized: boolean;
  reason: string;
  chain: X509Certificate[];
}

/** A handshake with host (servername) over what `open` gives, verified against `ca` but not refused; undefined when none completed. */
function handshake(open: () => Promise<net.Socket>, servername: string, ca: readonly string[], ms: number): Promise<Seen | undefined> {
  return new Promise((resolve) => {
    let done = false;
    let raw: net.Socket | undefined;
    let secure: tls.TLSSocket | undefined;
    const finish = (v: Seen | undefined) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      secure?.destroy();
      raw?.destroy();
      resolve(v);
    };
    const timer = setTimeout(() => finish(undefined), ms);
    timer.unref();
    open().then(
      (socket) => {
        raw = socket;
        if (done) return void socket.destroy();
        socket.on('error', () => finish(undefined));
        const s = tls.connect({ socket, servername, ca: [...ca], rejectUnauthorized: false, ALPNProtocols: ['http/1.1'] }, () => {
          finish({ authorized: s.authorized, reason: String(s.authorizationError ?? ''), chain: chainOf(s.getPeerCertificate(true)) });
        });
        secure = s;
        s.on('error', () => finish(undefined));
      },
      () => finish(undefined),
    );
  });
}

/** The chain as the handshake gave it, leaf first (each certificate's issuer after it), bounded. */
function chainOf(leaf: DetailedPeerCertificate | undefined): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (let c = leaf; c?.raw && out.length < 10; c = c.issuerCertificate === c ? undefined : c.issuerCertificate) {
    try {
      out.push(new X509Certificate(c.raw));
    } catch {
      break;
    }
  }
  return out;
}
