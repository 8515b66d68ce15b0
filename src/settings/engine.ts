/** `--engine local|swarm|podman` (else RUNNER_ENGINE, else local) and `--registry HOST:PORT` (else RUNNER_REGISTRY). Pure. */
import { UsageError } from '../common/errors.js';

export const ENGINES = ['local', 'swarm', 'podman'] as const;

export interface EngineSettings {
  name: (typeof ENGINES)[number];
  /** on swarm: the registry the nodes pull the runner's own images from */
  registry?: string;
  /** the registry came from the command line, where the local engine refuses it (a variable set for swarm runs is no reason to) */
  registryFromFlag: boolean;
  /** --registry-auth (else RUNNER_REGISTRY_AUTH), absolute: the docker config.json images are pulled with instead of the docker client's (registry-auth.ts) */
  registryAuth?: string;
}

export function readEngine(flags: { engine?: string | undefined; registry?: string | undefined }, env: NodeJS.ProcessEnv): EngineSettings {
  const name = flags.engine || env.RUNNER_ENGINE || 'local';
  if (!(ENGINES as readonly string[]).includes(name)) {
    throw new UsageError(`${flags.engine ? '--engine' : 'RUNNER_ENGINE'} takes ${ENGINES.slice(0, -1).join(', ')} or ${ENGINES[ENGINES.length - 1]}, got ${JSON.stringify(name)}`);
  }
  const registry = flags.registry || env.RUNNER_REGISTRY || undefined;
  return { name: name as EngineSettings['name'], ...(registry ? { registry } : {}), registryFromFlag: flags.registry !== undefined };
}
