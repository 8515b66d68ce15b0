/**
 * Whether a certificate chain an upstream presented leads to one of a set of
 * roots: each link checked by its issuer's name and signature, from the leaf
 * up, until a certificate is a root or is signed by one. Enough to tell which
 * bundle would trust a chain (trust-probe.ts); the TLS stack, not this, is
 * what decides whether a connection is trusted. Pure.
 */
import { X509Certificate } from 'node:crypto';

/** The certificates of a PEM text; ones that do not parse are left out. */
export function certificatesOf(pem: string): X509Certificate[] {
  const out: X509Certificate[] = [];
  for (const block of pem.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []) {
    try {
      out.push(new X509Certificate(block));
    } catch {
      // not a certificate after all: it anchors nothing
    }
  }
  return out;
}

/** The root that anchors `chain` (leaf first, as the server sent it), or undefined. */
export function anchorOf(chain: readonly X509Certificate[], roots: readonly X509Certificate[]): X509Certificate | undefined {
  for (let i = 0; i < chain.length; i++) {
    const cert = chain[i]!;
    const root = roots.find((r) => r.raw.equals(cert.raw) || signedBy(cert, r));
    if (root) return root;
    const next = chain[i + 1];
    // a chain that breaks here leads nowhere the roots can vouch for
    if (!next || !signedBy(cert, next)) return undefined;
  }
  return undefined;
}

function signedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey);
  } catch {
    return false;
  }
}

/** Who issued the chain's top certificate, one line (`CN=..., O=...`), bounded. */
export function topIssuer(chain: readonly X509Certificate[]): string {
  const top = chain.at(-1);
  // the upstream's words: no control character reaches a log or a terminal
  return top ? top.issuer.split('\n').join(', ').replace(/[\x00-\x1f\x7f-\x9f]/g, '?').slice(0, 200) : 'no certificate';
}

/** OpenSSL's verdicts that mean "no root here vouches for this chain": another bundle may. */
export const UNKNOWN_CA_REASONS: ReadonlySet<string> = new Set([
  'SELF_SIGNED_CERT_IN_CHAIN',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'CERT_UNTRUSTED',
]);
