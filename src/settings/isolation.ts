/** `--isolation runc|gvisor`, else RUNNER_ISOLATION: the sandbox of every step whose file does not name one. Pure. */
import { UsageError } from '../common/errors.js';
import { ISOLATIONS, type Isolation } from '../pipeline/schema.js';

export function readIsolation(flag: string | undefined, env: NodeJS.ProcessEnv): Isolation | undefined {
  const given = flag ?? (env.RUNNER_ISOLATION || undefined);
  if (given === undefined) return undefined;
  if (!(ISOLATIONS as readonly string[]).includes(given)) {
    throw new UsageError(`${flag !== undefined ? '--isolation' : 'RUNNER_ISOLATION'} takes ${ISOLATIONS.join(' or ')}, got ${JSON.stringify(given)}`);
  }
  return given as Isolation;
}
