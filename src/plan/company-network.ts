/**
 * What a company's network asks of every step: a CA bundle to trust (a
 * TLS-inspecting proxy's root among the public ones), and package mirrors in
 * place of the public registries. Given to `runner exec` and `runner serve`
 * (flags, environment), not in the pipeline file: they belong to the machine
 * a run is on, and the same file runs on a laptop at home and in the
 * company's CI. Without --ca-file, the bundle is the host's own (what the
 * host trusts, its steps trust; docs/company-networks.md says why). Pure:
 * what a step's environment gets, what a gateway allows, and what is wrong
 * with a bundle or a mirror's URL.
 */
import { hostPatternProblem } from '../gateway/hosts.js';

/** Where a step finds the bundle (a read-only file), whatever its image. */
export const CA_PATH = '/run/runner/ca.pem';
/**
 * The system bundle of Debian, Ubuntu and Alpine images (OpenSSL's default,
 * read by curl, git, Python's ssl, apt): the bundle is put there too, so a
 * tool that reads no variable trusts it as well.
 */
export const SYSTEM_BUNDLE_PATH = '/etc/ssl/certs/ca-certificates.crt';
/** A bundle larger than this is no bundle (the system's is about 200 KiB); it also travels in the gateway's config, which is bounded. */
export const MAX_CA_BYTES = 1024 ** 2;
/** Fewer certificates than this: likely only the company's own, without the public roots (see caWarning). */
const FEW = 10;

export interface CompanyNetwork {
  /** the PEM bundle every step, agent and gateway trusts */
  ca?: {
    pem: string;
    certificates: number;
    /** the file it was read from, for messages */
    from: string;
    /** the copy steps mount (ca-copy.ts), once a run has made it */
    hostPath?: string;
    /** who named it: the flag, its variable, or nobody (the host's own bundle, the default) */
    by?: '--ca-file' | 'RUNNER_CA_FILE' | 'host';
  };
  /** the steps were told to trust no bundle (their images' own roots): how it was said */
  caOff?: '--ca-file none' | 'RUNNER_CA_FILE=none';
  /**
   * The host's own bundle, when the steps do not trust it (caOff, or another --ca-file): never given to a step;
   * a gateway checks an upstream certificate the step would refuse against it, to say which flag fixes that.
   */
  hostCa?: { pem: string; from: string };
  /** an npm registry in place of registry.npmjs.org */
  npmRegistry?: string;
  /** a PyPI index (its "simple" URL) in place of pypi.org */
  pipIndex?: string;
}

/**
 * The variables that point the usual tools at the bundle. Node adds
 * NODE_EXTRA_CA_CERTS to its own roots; the others (OpenSSL, curl, git,
 * Python's requests, pip) replace their bundle with the file: it must be the
 * whole set of roots a step trusts, which is why the runner takes a full
 * bundle (the host's own, typically) and not just the company's certificate.
 */
export function caEnv(): Record<string, string> {
  return {
    NODE_EXTRA_CA_CERTS: CA_PATH,
    SSL_CERT_FILE: CA_PATH,
    REQUESTS_CA_BUNDLE: CA_PATH,
    PIP_CERT: CA_PATH,
    GIT_SSL_CAINFO: CA_PATH,
    CURL_CA_BUNDLE: CA_PATH,
  };
}

/** The mirrors' settings, as npm (pnpm, yarn 1), pip and uv read them. */
export function mirrorEnv(n: CompanyNetwork): Record<string, string> {
  const env: Record<string, string> = {};
  if (n.npmRegistry) env.npm_config_registry = n.npmRegistry;
  if (n.pipIndex) {
    env.PIP_INDEX_URL = n.pipIndex;
    env.UV_DEFAULT_INDEX = n.pipIndex;
    // pip refuses an index over plain HTTP unless its host is trusted
    const url = new URL(n.pipIndex);
    if (url.protocol === 'http:') env.PIP_TRUSTED_HOST = url.host;
  }
  return env;
}

/** Everything a step's environment gets from the company's network; the step's own env: wins over it. */
export function networkEnv(n: CompanyNetwork | undefined): Record<string, string> {
  if (!n) return {};
  return { ...(n.ca ? caEnv() : {}), ...mirrorEnv(n) };
}

/** The gateway allowlist entries of the mirrors: every gateway lets steps reach them. */
export function mirrorAllow(n: CompanyNetwork | undefined): string[] {
  const out: string[] = [];
  for (const u of [n?.npmRegistry, n?.pipIndex]) {
    if (!u) continue;
    const url = new URL(u);
    const port = url.port || (url.protocol === 'http:' ? '80' : '443');
    // a default port is what a name alone allows (80 for plain HTTP, 443 for a tunnel)
    out.push(port === (url.protocol === 'http:' ? '80' : '443') ? url.hostname : `${url.hostname}:${port}`);
  }
  return [...new Set(out)];
}

/** How many certificates a PEM text holds. */
export function countCertificates(pem: string): number {
  return (pem.match(/-----BEGIN (?:TRUSTED )?CERTIFICATE-----/g) ?? []).length;
}

/** What is wrong with a CA bundle's text, said with what to do; undefined when it holds at least one PEM certificate. */
export function caBundleProblem(from: string, text: string, bytes: number): string | undefined {
  if (bytes > MAX_CA_BYTES) return `${from} is ${Math.round(bytes / 1024)} KiB: a CA bundle is at most ${MAX_CA_BYTES / 1024 ** 2} MiB (the system's is about 200 KiB); give a PEM bundle, like /etc/ssl/certs/ca-certificates.crt`;
  if (text.includes('\0')) return `${from} is a binary file: give the CA certificates in PEM form (-----BEGIN CERTIFICATE-----); a DER file converts with openssl x509 -inform der -in FILE -out FILE.pem`;
  if (countCertificates(text) === 0) return `${from} holds no PEM certificate (-----BEGIN CERTIFICATE-----): give a PEM bundle, like the host's own /etc/ssl/certs/ca-certificates.crt`;
  // PEM's keys (PKCS#1/8, EC, OpenSSH), PGP's (PRIVATE KEY BLOCK), SSH2's (---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----) and PuTTY's
  if (/BEGIN [A-Z0-9 ]*PRIVATE KEY|^PuTTY-User-Key-File-|^Private-Lines:/m.test(text)) return `${from} holds a private key: a CA bundle is certificates only, and every step would read it; give the certificates alone`;
  return undefined;
}

/** A warning when the bundle looks like the company's certificate alone: the tools that replace their bundle would trust nothing else. */
export function caWarning(ca: NonNullable<CompanyNetwork['ca']>): string | undefined {
  if (ca.certificates >= FEW) return undefined;
  return `${ca.from} holds ${ca.certificates} certificate${ca.certificates === 1 ? '' : 's'}: steps trust only these (curl, git, pip and Python replace their own bundle with it; Node adds it to its own). To keep the public roots, hand over a full bundle: cat /etc/ssl/certs/ca-certificates.crt ${ca.from} > bundle.pem, and --ca-file bundle.pem`;
}

/** What is wrong with a mirror's URL (`flag` names where it came from), or undefined. */
export function mirrorUrlProblem(flag: string, text: string): string | undefined {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return `${flag}: ${JSON.stringify(text)} is not a URL: write one like https://npm.example.com/ or http://pypi.example.com/simple/`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `${flag}: ${JSON.stringify(text)} is not an http(s) URL`;
  if (url.username || url.password) return `${flag}: the URL holds a user or password, which every step would see in its environment: give the mirror's URL without them (a step that needs a login takes it as a secret)`;
  const problem = hostPatternProblem(url.hostname);
  if (problem) return `${flag}: the mirror's host is not one a gateway can allow (${problem}): give the mirror by its name`;
  return undefined;
}
