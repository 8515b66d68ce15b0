/**
 * Where steps run, chosen once at start: the local engine (containers with
 * the workspace mounted) or a swarm (jobs on its nodes, the workspace by tar).
 * Nothing past this choice branches on it.
 */
import Docker from 'dockerode';
import { errorMessage, UsageError } from '../common/errors.js';
import { TarTransport } from '../run/step-transport.js';
import { mountTransport } from './local/mount-transport.js';
import { DockerRuntime } from './docker.js';
import type { ContainerRuntime, StepTransport } from './runtime.js';
import { parseRegistry } from './registry-names.js';
import { SwarmRuntime } from './swarm.js';
import { transferHelper } from './transfer-helper.js';

export type EngineName = 'local' | 'swarm';

/**
 * The engine `name` names. `registry` (--registry, RUNNER_REGISTRY): on swarm, the registry the nodes pull the
 * runner's own images from; `registryFromFlag`: it was given on the command line, where the local engine refuses
 * it (an environment variable set for swarm runs is no reason to refuse a local one).
 */
export function openEngine(name: string, opts: { registry?: string | undefined; registryFromFlag?: boolean } = {}): { runtime: ContainerRuntime; transport: StepTransport } {
  if (name === 'local') {
    if (opts.registry && opts.registryFromFlag) throw new UsageError('--registry goes with --engine swarm: the local engine has the images itself');
    const runtime = new DockerRuntime();
    return { runtime, transport: mountTransport(runtime) };
  }
  if (name === 'swarm') {
    let registry: string | undefined;
    try {
      registry = opts.registry ? parseRegistry(opts.registry) : undefined;
    } catch (err) {
      throw new UsageError(errorMessage(err));
    }
    const api = new Docker();
    const runtime = new SwarmRuntime(api, registry);
    // the address the swarm's nodes reach this machine at: its swarm address, unless told otherwise
    const address = async () => process.env.RUNNER_TRANSFER_ADDRESS || (await runtime.managerAddress());
    return { runtime, transport: new TarTransport(address, runtime.manager, () => transferHelper(api, runtime.manager)) };
  }
  throw new UsageError(`--engine takes local or swarm, got "${name}"`);
}
