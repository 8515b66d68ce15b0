/**
 * The gateway's own CA, made at its start when it inspects: an ECDSA P-256
 * key made by Node's WebCrypto as non-extractable (no code, the gateway's own
 * included, can export it: it signs inside this process and dies with it), a
 * self-signed certificate valid for the step's time and an hour, name
 * constrained to the hosts the gateway inspects (no IP address at all), and
 * a leaf certificate per host, made when a step first asks for it (by SNI)
 * and kept. The step trusts the certificate (caPem); nothing else does.
 *
 * @peculiar/x509 builds the certificates: Node has no X.509 builder, and this
 * library signs through WebCrypto, so the CA's key stays a CryptoKey that
 * cannot be exported and signing is native (node-forge would hold the key as
 * JavaScript numbers and sign RSA in JavaScript).
 */
import 'reflect-metadata';
import { webcrypto } from 'node:crypto';
import tls from 'node:tls';
import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, NameConstraints, id_ce_nameConstraints } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

const ALG = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
/** how far back a certificate is valid from, for a step whose clock is a little behind */
const SKEW_MS = 5 * 60_000;
/** hosts whose leaf is kept; past them the oldest goes (a step asking for many names under `*.` cannot grow the gateway) */
const MAX_LEAVES = 1000;

/**
 * The DNS names the CA may sign for: the hosts as allow and the rules name
 * them, without port or `*.` (a dNSName constraint covers the name and every
 * name under it), lower case, once each. None: `invalid`, a name nothing has
 * (the constraint cannot be empty). Pure.
 */
export function constraintNames(hosts: readonly string[]): string[] {
  const names = new Set<string>();
  for (const h of hosts) {
    const name = h.toLowerCase().replace(/:\d+$/, '').replace(/^\*\./, '').replace(/\.$/, '');
    if (name && !name.includes('*')) names.add(name);
  }
  return names.size ? [...names].sort() : ['invalid'];
}

export class RunCa {
  private readonly leaves = new Map<string, Promise<tls.SecureContext>>();

  private constructor(
    /** the CA's certificate, for the step to trust */
    readonly pem: string,
    private readonly cert: x509.X509Certificate,
    private readonly signingKey: CryptoKey,
    private readonly leafKeys: CryptoKeyPair,
    private readonly leafKeyPem: string,
    private readonly notAfter: Date,
  ) {}

  /** A CA for `hosts` (see constraintNames), valid for lifetimeMs from now. */
  static async make(hosts: readonly string[], lifetimeMs: number): Promise<RunCa> {
    const keys = (await webcrypto.subtle.generateKey(ALG, false, ['sign', 'verify'])) as CryptoKeyPair;
    const notBefore = new Date(Date.now() - SKEW_MS);
    const notAfter = new Date(Date.now() + lifetimeMs);
    const constraints = new NameConstraints({
      permittedSubtrees: new GeneralSubtrees(constraintNames(hosts).map((dNSName) => new GeneralSubtree({ base: new GeneralName({ dNSName }) }))),
      // no address: every IPv4 and IPv6 one excluded
      excludedSubtrees: new GeneralSubtrees(['0.0.0.0/0', '::/0'].map((iPAddress) => new GeneralSubtree({ base: new GeneralName({ iPAddress }) }))),
    });
    const cert = await x509.X509CertificateGenerator.createSelfSigned({
      name: `CN=runner gateway CA ${randomHex(4)}, O=runner`,
      keys,
      notBefore,
      notAfter,
      signingAlgorithm: ALG,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        new x509.Extension(id_ce_nameConstraints, true, AsnConvert.serialize(constraints)),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
      ],
    });
    // one key for every leaf (as mitmproxy does): it is the leaf's, exported to hand to TLS; the CA's is not
    const leafKeys = (await webcrypto.subtle.generateKey(ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
    const der = Buffer.from(await webcrypto.subtle.exportKey('pkcs8', leafKeys.privateKey));
    const leafKeyPem = `-----BEGIN PRIVATE KEY-----\n${der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '')}\n-----END PRIVATE KEY-----\n`;
    return new RunCa(cert.toString('pem'), cert, keys.privateKey, leafKeys, leafKeyPem, notAfter);
  }

  /** The TLS context that presents `host`'s leaf (made on first use, then kept). */
  contextFor(host: string): Promise<tls.SecureContext> {
    const name = host.toLowerCase();
    let got = this.leaves.get(name);
    if (!got) {
      if (this.leaves.size >= MAX_LEAVES) this.leaves.delete(this.leaves.keys().next().value!);
      got = this.leafPem(name).then((cert) => tls.createSecureContext({ key: this.leafKeyPem, cert: `${cert.trim()}\n${this.pem.trim()}\n` }));
      got.catch(() => this.leaves.delete(name));
      this.leaves.set(name, got);
    }
    return got;
  }

  /** A leaf certificate for `host`, signed by the CA. */
  async leafPem(host: string): Promise<string> {
    const leaf = await x509.X509CertificateGenerator.create({
      subject: `CN=${host}`,
      issuer: this.cert.subject,
      publicKey: this.leafKeys.publicKey,
      signingKey: this.signingKey,
      signingAlgorithm: ALG,
      notBefore: new Date(Date.now() - SKEW_MS),
      notAfter: this.notAfter,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension([{ type: 'dns', value: host }]),
        await x509.AuthorityKeyIdentifierExtension.create(this.cert),
      ],
    });
    return leaf.toString('pem');
  }
}

function randomHex(bytes: number): string {
  return Buffer.from(webcrypto.getRandomValues(new Uint8Array(bytes))).toString('hex');
}
