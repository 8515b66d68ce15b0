/** Resolving the secrets steps need, before anything starts. Pure. */
import { RunnerError } from '../common/errors.js';

/** Where the door reads secrets from, for the message when one is missing (RunSettings.secretsFrom). */
export interface SecretsFrom {
  /** false: the door never reads the environment (runner mcp) */
  environment: boolean;
  /** the --secrets-file it reads, if any */
  file?: string;
}

export function resolveSecrets(
  names: readonly string[],
  source: Readonly<Record<string, string | undefined>>,
  from: SecretsFrom = { environment: true },
): Record<string, string> {
  const missing = names.filter((n) => source[n] === undefined || source[n] === '');
  if (missing.length > 0) {
    const them = missing.length > 1 ? 'them' : 'it';
    const how = from.environment
      ? `give ${them} in the runner's environment (export ${missing[0]}=...) or in a file of NAME=value lines passed with --secrets-file`
      : from.file
        ? `add ${them} to ${from.file} (a line ${missing[0]}=...): this runner reads secrets from its --secrets-file alone, never from the environment`
        : `this runner reads secrets from a --secrets-file alone, never from the environment: start it again with --secrets-file F, F a file of NAME=value lines (${missing[0]}=...)`;
    throw new RunnerError(
      'secret_missing',
      `secret${missing.length > 1 ? 's' : ''} ${missing.join(', ')} named by the pipeline ${missing.length > 1 ? 'are' : 'is'} not set: ${how}`,
    );
  }
  return Object.fromEntries(names.map((n) => [n, source[n]!]));
}
