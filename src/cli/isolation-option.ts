/** `--isolation runc|gvisor` on exec and serve, else RUNNER_ISOLATION: the sandbox of every step whose file does not name one. */
import { UsageError } from '../common/errors.js';
import { ISOLATIONS, type Isolation } from '../pipeline/schema.js';

export const ISOLATION_FLAG = { isolation: { type: 'string' } } as const;

export function isolationOption(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): { isolation?: Isolation } {
  const given = flag ?? (env.RUNNER_ISOLATION || undefined);
  if (given === undefined) return {};
  if (!(ISOLATIONS as readonly string[]).includes(given)) {
    throw new UsageError(`${flag !== undefined ? '--isolation' : 'RUNNER_ISOLATION'} takes ${ISOLATIONS.join(' or ')}, got ${JSON.stringify(given)}`);
  }
  return { isolation: given as Isolation };
}
