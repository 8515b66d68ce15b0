/** Resolving the secrets steps need, before anything starts. Pure. */
import { RunnerError } from '../common/errors.js';

export function resolveSecrets(names: readonly string[], source: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const missing = names.filter((n) => source[n] === undefined || source[n] === '');
  if (missing.length > 0) {
    throw new RunnerError(
      'secret_missing',
      `secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')} named by the pipeline ${missing.length > 1 ? 'are' : 'is'} not set: ` +
        `give ${missing.length > 1 ? 'them' : 'it'} in the runner's environment (export ${missing[0]}=...) or in a file of NAME=value lines passed with --secrets-file`,
    );
  }
  return Object.fromEntries(names.map((n) => [n, source[n]!]));
}
