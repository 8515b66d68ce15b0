/**
 * What a company's network asks of every step: the CA bundle (--ca-file, else
 * RUNNER_CA_FILE, else the host's own: what the host trusts, its steps trust;
 * `none` turns that off), read and checked here, and the package mirrors
 * (--npm-registry, --pip-index, else their variables). The bundles are the
 * files read; the rest is pure.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { errorMessage, UsageError } from '../common/errors.js';
import { caBundleProblem, caWarning, countCertificates, MAX_CA_BYTES, mirrorUrlProblem, type CompanyNetwork } from '../plan/company-network.js';
import type { SettingsFlags } from './flags.js';

/**
 * Where hosts keep the bundle of the roots they trust, first found first: Debian, Ubuntu, Alpine and Arch;
 * RHEL and Fedora; macOS and the BSDs; openSUSE. RUNNER_HOST_CA_BUNDLE names another (`none`: no host bundle).
 */
export const HOST_BUNDLES = ['/etc/ssl/certs/ca-certificates.crt', '/etc/pki/tls/certs/ca-bundle.crt', '/etc/ssl/cert.pem', '/etc/ssl/ca-bundle.pem'];

/** `warn`: a bundle that is likely not the whole set of roots, a host bundle that cannot be taken. Undefined when nothing is asked. */
export function readCompany(values: SettingsFlags, env: NodeJS.ProcessEnv, warn: (m: string) => void): CompanyNetwork | undefined {
  const caFile = values['ca-file'] ?? (env.RUNNER_CA_FILE || undefined);
  const caFlag = values['ca-file'] !== undefined ? '--ca-file' : 'RUNNER_CA_FILE';
  const npm = values['npm-registry'] ?? (env.RUNNER_NPM_REGISTRY || undefined);
  const pip = values['pip-index'] ?? (env.RUNNER_PIP_INDEX || undefined);
  const n: CompanyNetwork = {};
  const host = readHostBundle(env, warn);
  if (caFile === 'none') {
    // the steps trust their images' roots; the host's bundle still tells a gateway which flag would help
    n.caOff = caFlag === '--ca-file' ? '--ca-file none' : 'RUNNER_CA_FILE=none';
    if (host) n.hostCa = { pem: host.pem, from: host.from };
  } else if (caFile) {
    n.ca = readCaFile(caFile, caFlag);
    n.ca.by = caFlag;
    const w = caWarning(n.ca);
    if (w) warn(w);
    if (host && host.pem !== n.ca.pem) n.hostCa = { pem: host.pem, from: host.from };
  } else if (host) n.ca = host;
  for (const [flag, value, key] of [['--npm-registry (or RUNNER_NPM_REGISTRY)', npm, 'npmRegistry'], ['--pip-index (or RUNNER_PIP_INDEX)', pip, 'pipIndex']] as const) {
    if (!value) continue;
    const problem = mirrorUrlProblem(flag, value);
    if (problem) throw new UsageError(problem);
    n[key] = value;
  }
  return Object.keys(n).length ? n : undefined;
}

/**
 * The host's own bundle, `by: 'host'`: RUNNER_HOST_CA_BUNDLE (a file that must be taken; `none`: none), else the
 * first of HOST_BUNDLES that exists. One found but not fit to be a bundle is left out with a warning, not refused:
 * nothing was asked of it.
 */
export function readHostBundle(env: NodeJS.ProcessEnv, warn: (m: string) => void, candidates: readonly string[] = HOST_BUNDLES): NonNullable<CompanyNetwork['ca']> | undefined {
  const named = env.RUNNER_HOST_CA_BUNDLE || undefined;
  if (named === 'none') return undefined;
  if (named) return { ...readCaFile(named, 'RUNNER_HOST_CA_BUNDLE'), by: 'host' };
  const file = candidates.find((f) => existsSync(f));
  if (!file) return undefined;
  try {
    return { ...readCaFile(file, "this machine's CA bundle"), by: 'host' };
  } catch (err) {
    warn(`${errorMessage(err)}; the steps trust their images' own roots (give a bundle with --ca-file, or --ca-file none to say so)`);
    return undefined;
  }
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
