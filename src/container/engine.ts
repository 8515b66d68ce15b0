/**
 * Where steps run, chosen once at start: the local engine (containers with
 * the workspace mounted, src/container/local/; Docker, or Podman through its
 * Docker-compatible API) or a swarm (jobs on its nodes,
 * the workspace by tar, src/container/swarm/). Each is a ContainerRuntime and
 * a StepTransport behind the one port (runtime.ts); this is the one place that
 * picks one, and that hands the swarm's what it needs of the gateway's side
 * (its relays, the transfer helper its image carries). Nothing past this
 * choice branches on it.
 */
import Docker from 'dockerode';
import { errorMessage, UsageError } from '../common/errors.js';
import { RELAY_PORT } from '../gateway/config.js';
import { checkGatewayImage, GATEWAY_IMAGE } from '../gateway/host/image.js';
import { startGateway, type GatewayGift, type OpenGateway } from '../gateway/host/step-gateway.js';
import { DockerRuntime } from './local/docker.js';
import { mountTransport } from './local/mount-transport.js';
import { podmanSocket } from './local/podman.js';
import { RegistryCredentials } from './registry-credentials.js';
import { parseRegistry } from './registry-names.js';
import type { ContainerRuntime, StepTransport } from './runtime.js';
import { SwarmRuntime } from './swarm/runtime.js';
import { TarTransport, type Relay } from './swarm/tar-transport.js';
import { transferHelper } from './swarm/transfer-helper.js';

export type EngineName = 'local' | 'swarm' | 'podman';

/**
 * Points this process's engine clients at the engine `name` names, before any of them is made: `podman` sets
 * DOCKER_HOST to Podman's socket when it is unset (root's /run/podman/podman.sock, a user's under XDG_RUNTIME_DIR),
 * so that every part of a command (its recovery of earlier runs, its image checks, its runs) talks to the one engine.
 */
export function useEngine(name: string): void {
  if (name === 'podman') process.env.DOCKER_HOST = podmanSocket(process.env, process.getuid?.());
}

/**
 * The engine `name` names. `registry` (--registry, RUNNER_REGISTRY): on swarm, the registry the nodes pull the
 * runner's own images from; `registryFromFlag`: it was given on the command line, where the local engine refuses
 * it (an environment variable set for swarm runs is no reason to refuse a local one). `registryAuth`
 * (--registry-auth): the docker config.json images are pulled with; absent: the docker client's own.
 */
export function openEngine(name: string, opts: { registry?: string | undefined; registryFromFlag?: boolean; registryAuth?: string | undefined } = {}): { runtime: ContainerRuntime; transport: StepTransport } {
  const credentials = new RegistryCredentials(opts.registryAuth);
  if (name === 'local') {
    if (opts.registry && opts.registryFromFlag) throw new UsageError('--registry goes with --engine swarm: the local engine has the images itself');
    const runtime = new DockerRuntime(undefined, 'bridge', credentials);
    return { runtime, transport: mountTransport(runtime) };
  }
  if (name === 'podman') {
    if (opts.registry && opts.registryFromFlag) throw new UsageError('--registry goes with --engine swarm: Podman has the images itself');
    useEngine(name);
    // Podman's Docker-compatible API, through the local adapter: what differs is asked of the engine (local/podman.ts)
    const runtime = new DockerRuntime(undefined, 'bridge', credentials, true);
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
    const runtime = new SwarmRuntime(api, registry, credentials);
    // the address the swarm's nodes reach this machine at: its swarm address, unless told otherwise
    const address = async () => process.env.RUNNER_TRANSFER_ADDRESS || (await runtime.managerAddress());
    return { runtime, transport: swarmTransport(api, runtime.manager, address) };
  }
  throw new UsageError(`--engine takes local, swarm or podman, got "${name}"`);
}

/**
 * The swarm's transport, on the engine at `api` (`manager`: its runtime there, making the networks relays and
 * gateways share with the nodes): its relays are gateways that allow nothing and relay to the runner's transfer
 * server, its helper comes from the gateway image.
 */
export function swarmTransport(api: Docker, manager: ContainerRuntime, address: () => Promise<string>): TarTransport {
  const check = () => checkGatewayImage(manager);
  return new TarTransport({
    address,
    manager,
    helper: { check, bytes: () => transferHelper(api, GATEWAY_IMAGE, check) },
    startRelay: async ({ name, labels, to }) => relayOf(await startGateway(manager, { name, labels, egressNetwork: 'bridge', ...relayGift(to) })),
    relayOn: (held, to) => relayOf(held.give(relayGift(to))),
  });
}

/** A relay's gateway allows nothing: it only passes the step's connections to the runner's transfer server. */
function relayGift(to: { host: string; port: number }): GatewayGift {
  return { config: { allow: [], prices: {}, relay: { port: RELAY_PORT, to } }, onEvent: () => undefined };
}

function relayOf(gw: OpenGateway): Relay {
  return { network: gw.network, dns: gw.dns, address: { host: gw.dns[0]!, port: RELAY_PORT }, close: async () => void (await gw.close()) };
}
