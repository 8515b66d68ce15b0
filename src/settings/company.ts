/**
 * What a company's network asks of every step: the CA bundle (--ca-file, else
 * RUNNER_CA_FILE), read and checked here, and the package mirrors
 * (--npm-registry, --pip-index, else their variables). The bundle is the one
 * file read; the rest is pure.
 */
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { errorMessage, UsageError } from '../common/errors.js';
import { caBundleProblem, caWarning, countCertificates, MAX_CA_BYTES, mirrorUrlProblem, type CompanyNetwork } from '../plan/company-network.js';
import type { SettingsFlags } from './flags.js';

/** `warn`: a bundle that is likely not the whole set of roots. Undefined when nothing is asked. */
export function readCompany(values: SettingsFlags, env: NodeJS.ProcessEnv, warn: (m: string) => void): CompanyNetwork | undefined {
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
