/**
 * The swarm engine's ContainerRuntime: each step is a job on one of the
 * swarm's nodes (task.ts); images, networks and the runner's own containers
 * are the manager's engine's, asked through a local Docker runtime there. The
 * manager's API cannot reach a worker's containers, so the workspace comes
 * and goes by tar (tar-transport.ts): a spec here has no mounts.
 */
import Docker from 'dockerode';
import { ContainerError, errorMessage } from '../../common/errors.js';
import type { Isolation } from '../../pipeline/schema.js';
import { DockerRuntime, recipesDir } from '../local/docker.js';
import { isOwnImage, ownImageMissing } from '../own-images.js';
import { pinnedOwnImage } from '../registry.js';
import { RegistryCredentials } from '../registry-credentials.js';
import type { ContainerHandle, ContainerRuntime, ContainerSpec, NetworkSpec, PullProgress } from '../runtime.js';
import { nameTaken } from './names.js';
import { SWARM_NETWORK, SwarmTask } from './task.js';

export class SwarmRuntime implements ContainerRuntime {
  private network: Promise<void> | undefined;
  /** the manager's engine: images, the runner's own containers and networks, as on a local engine */
  private readonly engine: DockerRuntime;
  /** containers on the manager itself (a step's relay and gateway), on networks every node shares (attachable overlays) */
  readonly manager: DockerRuntime;

  /**
   * `registry` (HOST:PORT): the registry the nodes pull the runner's own
   * images from, named there by digest; without it they go by image ID and
   * each node must have them loaded (docs/scale-out.md). `credentials`: what
   * the manager pulls with, and each job is created with so that its node pulls
   * with them too (the service's X-Registry-Auth); never the job's env.
   */
  constructor(
    private readonly api: Docker = new Docker(),
    private readonly registry?: string,
    private readonly credentials: RegistryCredentials = new RegistryCredentials(),
  ) {
    this.engine = new DockerRuntime(api, 'bridge', credentials);
    this.manager = new DockerRuntime(api, 'overlay', credentials);
  }

  async ping(): Promise<void> {
    await this.engine.ping();
    const info = (await this.api.info()) as { Swarm?: { LocalNodeState?: string; ControlAvailable?: boolean } };
    if (info.Swarm?.LocalNodeState !== 'active' || !info.Swarm.ControlAvailable) {
      throw new ContainerError('not_a_swarm_manager', 'the engine at DOCKER_HOST is not a swarm manager: run `docker swarm init` there (or scripts/swarm-lab.sh up to try it on one machine), or drop --engine swarm');
    }
  }

  /** The manager's address as the swarm's nodes reach it. */
  async managerAddress(): Promise<string> {
    const info = (await this.api.info()) as { Swarm?: { NodeAddr?: string } };
    if (!info.Swarm?.NodeAddr) throw new ContainerError('not_a_swarm_manager', 'the engine reports no swarm address');
    return info.Swarm.NodeAddr;
  }

  /** An own image with a registry must be there, as this engine has it, before the run starts: else the push command. */
  async ensureImage(image: string, onProgress: (p: PullProgress) => void): Promise<void> {
    if (this.registry && isOwnImage(image)) {
      await pinnedOwnImage(this.api, this.registry, image, this.credentials);
      return;
    }
    return this.engine.ensureImage(image, onProgress);
  }

  hasImage(image: string): Promise<boolean> {
    return this.engine.hasImage(image);
  }

  imageLabels(image: string): Promise<Record<string, string> | undefined> {
    return this.engine.imageLabels(image);
  }

  async checkIsolation(steps: ReadonlyArray<{ id: string; isolation: Isolation }>): Promise<string[]> {
    const sandboxed = steps.find((s) => s.isolation === 'gvisor');
    if (!sandboxed) return [];
    throw new ContainerError('swarm_unsupported', `step ${sandboxed.id} asks for isolation: gvisor, which --engine swarm cannot give (a swarm service cannot name a runtime): run it on the local engine (docs/gvisor.md)`);
  }

  checkHostPaths(paths: string[]): Promise<void> {
    return this.engine.checkHostPaths(paths);
  }

  async create(spec: ContainerSpec): Promise<ContainerHandle> {
    if (spec.isolation === 'gvisor') await this.checkIsolation([{ id: spec.name, isolation: 'gvisor' }]);
    if (spec.mounts.length) throw new ContainerError('swarm_mounts', 'a swarm step cannot mount the runner\'s disk: its workspace travels by tar (a bug: the tar transport should have taken the mounts)');
    await this.ensureNetwork();
    const image = await this.jobImage(spec.image);
    // an image named by ID is never pulled; any other is, by the node the job lands on
    const auth = image.startsWith('sha256:') ? undefined : await this.credentials.authFor(image);
    return new SwarmTask(this.api, { ...spec, image }, spec.image, this.registry, auth?.authconfig);
  }

  /** A step's job: the services whose labels include all of `labels`. */
  async listByLabels(labels: Record<string, string>): Promise<Array<{ id: string; labels: Record<string, string> }>> {
    const services = await this.api.listServices({ filters: { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) } });
    return services.map((s) => ({ id: s.ID, labels: (s.Spec?.Labels as Record<string, string>) ?? {} }));
  }

  /** The manager's containers and the swarm's services (with their secrets and configs) whose labels include all of `labels`. */
  removeByLabels(labels: Record<string, string>): Promise<number> {
    return this.engine.removeByLabels(labels);
  }

  createNetwork(spec: NetworkSpec): Promise<{ subnet: string }> {
    return this.engine.createNetwork(spec);
  }

  removeNetwork(name: string): Promise<void> {
    return this.engine.removeNetwork(name);
  }

  networkGateways(): Promise<string[]> {
    return this.engine.networkGateways();
  }

  removeNetworksByLabels(labels: Record<string, string>): Promise<number> {
    return this.engine.removeNetworksByLabels(labels);
  }

  private ensureNetwork(): Promise<void> {
    return (this.network ??= (async () => {
      const found = await this.api.listNetworks({ filters: { name: [SWARM_NETWORK] } });
      if (found.some((n) => n.Name === SWARM_NETWORK)) return;
      // runs started at once race to make it: the one that loses hears "already exists" from the engine,
      // or "name conflicts with an existing object" from the swarm, and uses the winner's
      await this.api.createNetwork({ Name: SWARM_NETWORK, Driver: 'overlay', Attachable: true, CheckDuplicate: true, Labels: { 'dev.runner.role': 'swarm' } }).catch((err: unknown) => {
        if (!nameTaken(err)) throw err;
      });
    })());
  }

  /**
   * The image a job names. A node pulls a job's image by name before every task, even one it has, and a
   * newer image found under the name replaces its own; only an image ID is never pulled. So the runner's own
   * images (own-images.ts) go by the ID this engine has them under: a node runs exactly that image, or
   * lacks it and rejects the task. With a registry they go by the registry's digest of exactly that image
   * (registry.ts), which a node lacking it pulls. Other images go by name, pulled as the file asks.
   */
  private async jobImage(image: string): Promise<string> {
    if (!isOwnImage(image)) return image;
    if (this.registry) return pinnedOwnImage(this.api, this.registry, image, this.credentials);
    try {
      return (await this.api.getImage(image).inspect()).Id;
    } catch (err) {
      throw new ContainerError('image_missing', `${ownImageMissing(image, recipesDir())} (${errorMessage(err).split('\n')[0]})`, { cause: err });
    }
  }
}
