/**
 * Where steps run, chosen once at start: the local engine (containers with
 * the workspace mounted) or a swarm (jobs on its nodes, the workspace by tar).
 * Nothing past this choice branches on it.
 */
import { UsageError } from '../common/errors.js';
import { mountTransport, TarTransport, type StepTransport } from '../run/step-transport.js';
import { DockerRuntime } from './docker.js';
import type { ContainerRuntime } from './runtime.js';
import { SwarmRuntime } from './swarm.js';

export type EngineName = 'local' | 'swarm';

export function openEngine(name: string): { runtime: ContainerRuntime; transport: StepTransport } {
  if (name === 'local') return { runtime: new DockerRuntime(), transport: mountTransport };
  if (name === 'swarm') {
    const runtime = new SwarmRuntime();
    // the address the swarm's nodes reach this machine at: its swarm address, unless told otherwise
    const address = async () => process.env.RUNNER_TRANSFER_ADDRESS || (await runtime.managerAddress());
    return { runtime, transport: new TarTransport(address, runtime.manager) };
  }
  throw new UsageError(`--engine takes local or swarm, got "${name}"`);
}
