/**
 * Where steps' gateways reach out, and what a company's network asks of every
 * step, for `runner exec` and `runner serve`: their flags, else the
 * environment. Read and checked once, before anything starts.
 */
import { readFileSync, statSync } from 'node:fs';
import { isIP } from 'node:net';
import path from 'node:path';
import { errorMessage, UsageError } from '../common/errors.js';
import { parseCidrList } from '../gateway/address-policy.js';
import { parseProxyUrl, redacted, type UpstreamProxy } from '../gateway/upstream-proxy.js';
import { caBundleProblem, caWarning, countCertificates, MAX_CA_BYTES, mirrorUrlProblem, type CompanyNetwork } from '../plan/company-network.js';

export const EGRESS_FLAGS = {
  'egress-network': { type: 'string' },
  'egress-private': { type: 'string' },
  'egress-proxy': { type: 'string' },
  'ca-file': { type: 'string' },
  'npm-registry': { type: 'string' },
  'pip-index': { type: 'string' },
} as const;

export interface EgressOptions {
  egressNetwork: string;
  egressPrivate: string[];
  /** name servers the gateways resolve allowed names with (RUNNER_EGRESS_DNS); absent: the engine's */
  egressDns?: string[];
  /** the company's proxy the gateways reach out through */
  egressProxy?: UpstreamProxy;
  /** the CA bundle and mirrors every step gets */
  company?: CompanyNetwork;
}

type Values = { [K in keyof typeof EGRESS_FLAGS]?: string | undefined };

/** `warn`: what is allowed but likely not meant (a bundle of one certificate, a proxy the containers cannot reach). */
export function egressOptions(values: Values, warn: (message: string) => void = () => undefined, env: NodeJS.ProcessEnv = process.env): EgressOptions {
  const ranges = parseCidrList(values['egress-private'] ?? env.RUNNER_EGRESS_PRIVATE);
  if (typeof ranges === 'string') throw new UsageError(`${ranges} (--egress-private, or RUNNER_EGRESS_PRIVATE, takes CIDR[,CIDR])`);
  const dns = (env.RUNNER_EGRESS_DNS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
  const badDns = dns.find((a) => !isIP(a));
  if (badDns) throw new UsageError(`RUNNER_EGRESS_DNS: ${JSON.stringify(badDns)} is not an IP address (it takes name servers' addresses, comma-separated)`);
  const proxy = egressProxy(values['egress-proxy'], env, warn);
  const company = companyNetwork(values, env, warn);
  return {
    egressNetwork: values['egress-network'] || env.RUNNER_EGRESS_NETWORK || 'bridge',
    egressPrivate: ranges,
    ...(dns.length ? { egressDns: dns } : {}),
    ...(proxy ? { egressProxy: proxy } : {}),
    ...(company ? { company } : {}),
  };
}

/** --egress-proxy URL (`none`: no proxy), else RUNNER_EGRESS_PROXY, else the runner's own HTTPS_PROXY; NO_PROXY's names go direct. */
function egressProxy(flag: string | undefined, env: NodeJS.ProcessEnv, warn: (m: string) => void): UpstreamProxy | undefined {
  const given = flag ?? env.RUNNER_EGRESS_PROXY;
  const inherited = given === undefined ? env.HTTPS_PROXY || env.https_proxy || undefined : undefined;
  const text = given ?? inherited;
  if (!text || text === 'none') return undefined;
  const where = given !== undefined ? (flag !== undefined ? '--egress-proxy' : 'RUNNER_EGRESS_PROXY') : 'HTTPS_PROXY';
  const parsed = parseProxyUrl(text, env.NO_PROXY ?? env.no_proxy);
  if (typeof parsed === 'string') {
    if (inherited) {
      warn(`the gateways reach out directly: ${where} ${parsed} (give one with --egress-proxy, or --egress-proxy none to say so)`);
      return undefined;
    }
    throw new UsageError(`${where}: ${parsed}`);
  }
  // the gateways run in containers, where loopback is the container itself
  if (parsed.host === 'localhost' || /^127\./.test(parsed.host) || parsed.host === '::1') {
    const why = `${where} ${redacted(text)} is on loopback, which in a gateway's container is the container itself: give an address the containers reach (the host's on the egress network, like http://172.17.0.1:3128)`;
    if (inherited) {
      warn(`the gateways reach out directly: ${why}, or --egress-proxy none`);
      return undefined;
    }
    throw new UsageError(why);
  }
  return parsed;
}

function companyNetwork(values: Values, env: NodeJS.ProcessEnv, warn: (m: string) => void): CompanyNetwork | undefined {
  const caFile = values['ca-file'] ?? (env.RUNNER_CA_FILE || undefined);
  const npm = values['npm-registry'] ?? (env.RUNNER_NPM_REGISTRY || undefined);
  const pip = values['pip-index'] ?? (env.RUNNER_PIP_INDEX || undefined);
  const n: CompanyNetwork = {};
  if (caFile) {
    n.ca = readCaFile(caFile, values['ca-file'] !== undefined ? '--ca-file' : 'RUNNER_CA_FILE');
    const w = caWarning(n.ca);
    if (w) warn(w);
  }
  for (const [flag, value, key] of [['--npm-registry (or RUNNER_NPM_REGISTRY)', npm, 'npmRegistry'], ['--pip-index (or RUNNER_PIP_INDEX)', pip, 'pipIndex']] as const) {
    if (!value) continue;
    const problem = mirrorUrlProblem(flag, value);
    if (problem) throw new UsageError(problem);
    n[key] = value;
  }
  return Object.keys(n).length ? n : undefined;
}

/** The bundle's text, checked: it exists, is a file this user reads, bounded, and holds PEM certificates. */
export function readCaFile(file: string, flag: string): NonNullable<CompanyNetwork['ca']> {
  const from = path.resolve(file);
  let size: number;
  try {
    const st = statSync(from);
    if (!st.isFile()) throw new UsageError(`${flag}: ${from} is not a file: give a PEM bundle, like /etc/ssl/certs/ca-certificates.crt (the host's own)`);
    size = st.size;
  } catch (err) {
    if (err instanceof UsageError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new UsageError(code === 'ENOENT' ? `${flag}: ${from} does not exist: give a PEM bundle, like /etc/ssl/certs/ca-certificates.crt (the host's own)` : `${flag}: ${from} cannot be read (${errorMessage(err)})`);
  }
  if (size > MAX_CA_BYTES) throw new UsageError(`${flag}: ${caBundleProblem(from, '', size)}`);
  let pem: string;
  try {
    pem = readFileSync(from, 'utf8');
  } catch (err) {
    throw new UsageError(`${flag}: ${from} cannot be read by this user (${errorMessage(err)}): make it readable, or copy it where it is`);
  }
  const problem = caBundleProblem(from, pem, Buffer.byteLength(pem));
  if (problem) throw new UsageError(`${flag}: ${problem}`);
  return { pem, certificates: countCertificates(pem), from };
}
