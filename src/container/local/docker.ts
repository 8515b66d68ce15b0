/** The ContainerRuntime on a Docker engine, through dockerode. The only file that imports dockerode. */
import Docker from 'dockerode';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { ContainerError, errorMessage } from '../../common/errors.js';
import { packageRoot } from '../../common/package-root.js';
import { DockerGvisor } from './docker-gvisor.js';
import { networkGatewaysOf, type NetworkFacts } from './network-gateways.js';
import { gvisorPidLimits } from '../gvisor.js';
import { hostPathProblem, ownContainerId, type OwnMount } from '../host-paths.js';
import { isOwnImage, ownImageMissing } from '../own-images.js';
import { engineReason, isAuthRefusal, pullRefused } from '../registry-auth.js';
import { RegistryCredentials } from '../registry-credentials.js';
import { encodeSecretEnv, encodeWarmStart, preludeArgv, WARM_PRELUDE, WARM_PRELUDE_NAME } from '../secret-env.js';
import { checkIsolationRule } from './podman-firewall.js';
import { isolatedNetworkOptions, isPodmanVersion, PODMAN_OWN_IMAGES, ownProcessLimit, podmanNetworkBody, podmanOverlayBind, podmanHint, podmanSysctls, podmanHost, podmanOomUnreported, podmanRefusal } from './podman.js';
import type { Isolation } from '../../pipeline/schema.js';
import { LABELS, type ContainerHandle, type ContainerRuntime, type ContainerSpec, type ExitState, type HeldContainer, type ImageBuild, type ImageConfig, type Mount, type NetworkSpec, type OutputHandler, type PullProgress } from '../runtime.js';

interface HttpError {
  statusCode?: number;
  code?: string;
  message?: string;
}

const status = (err: unknown): number | undefined => (err as HttpError)?.statusCode;

export function describeEndpoint(): string {
  return process.env.DOCKER_HOST ?? '/var/run/docker.sock';
}

/** How a container is sandboxed: its runtime (gVisor's, or the engine's default), and its pids caps. */
interface SandboxSettings {
  runtime?: string;
  cgroupPids: number;
  nproc?: number;
}

export class DockerRuntime implements ContainerRuntime {
  private readonly docker: Docker;
  private ownMounts: Promise<OwnMount[] | undefined> | undefined;
  private readonly gvisor: DockerGvisor;

  /**
   * `overlay`: the networks it makes are a swarm's (attachable overlays), so a
   * container here and a job on any node can share one; the host has no
   * address on an overlay, so `isolated` needs nothing more.
   */
  constructor(
    docker?: Docker,
    private readonly networks: 'bridge' | 'overlay' = 'bridge',
    /** the credentials images are pulled with (the docker client's, or --registry-auth's): the engine's alone, never a step's */
    readonly credentials: RegistryCredentials = new RegistryCredentials(),
    /** --engine podman: an engine that is not Podman is refused at ping */
    private readonly expectPodman = false,
  ) {
    this.docker = docker ?? new Docker();
    this.gvisor = new DockerGvisor(this.docker, describeEndpoint());
  }

  private podman: Promise<boolean> | undefined;
  /** the engine does not report a kill at the memory cap (Podman on cgroup v1): its containers say so in their exit */
  private oomUnreported = false;
  /** Whether the engine is Podman (its Docker-compatible API): asked once, its differences in podman.ts. */
  private isPodman(): Promise<boolean> {
    return (this.podman ??= this.docker.version().then(isPodmanVersion, () => false));
  }

  /** Refuses a Podman that cannot hold a step's limits (rootless where its cgroups are not delegated), or Docker where Podman was asked for. */
  private async checkPodman(): Promise<void> {
    const podman = await this.isPodman();
    if (!podman) {
      if (this.expectPodman) throw new ContainerError('engine_unfit', `--engine podman, but the engine at ${describeEndpoint()} is not Podman: point DOCKER_HOST at Podman's socket (root: unix:///run/podman/podman.sock, started by scripts/ensure-podman.sh), or use --engine local`);
      return;
    }
    const info = await new Promise<unknown>((resolve, reject) =>
      this.docker.modem.dial({ path: '/v4.0.0/libpod/info', method: 'GET', statusCodes: { 200: true }, options: {} }, (err: unknown, data: unknown) => (err ? reject(err) : resolve(data))),
    ).catch((err: unknown) => {
      throw engineError("asking Podman how it runs (/libpod/info)", err);
    });
    const host = podmanHost(info as Parameters<typeof podmanHost>[0]);
    this.oomUnreported = podmanOomUnreported(host);
    // rootless, a step's networks are in the user's own network namespace: the host has no address on them
    const refusal = podmanRefusal(host, describeEndpoint()) ?? (host.rootless ? undefined : await checkIsolationRule());
    if (refusal) throw new ContainerError('engine_unfit', refusal);
  }

  async checkIsolation(steps: ReadonlyArray<{ id: string; isolation: Isolation; image: string }>): Promise<string[]> {
    const sandboxed = steps.filter((s) => s.isolation === 'gvisor');
    if (!sandboxed.length) return [];
    return (await this.gvisor.check([...new Set(sandboxed.map((s) => s.id))], sandboxed[0]!.image)).notes;
  }

  async ping(): Promise<void> {
    try {
      await this.docker.ping();
    } catch (err) {
      const code = (err as HttpError).code ?? (err as HttpError).statusCode ?? errorMessage(err);
      const fix =
        code === 'EACCES'
          ? `this user (uid ${process.getuid?.()}) may not use the engine's socket: add it to the docker group (usermod -aG docker $USER, then log in again) or run as root`
          : 'start the engine (make docker) or set DOCKER_HOST';
      throw new ContainerError('docker_unreachable', `docker is not reachable at ${describeEndpoint()} (${code}): ${fix}`, { cause: err });
    }
    await this.checkPodman();
  }

  async hasImage(image: string): Promise<boolean> {
    try {
      await this.docker.getImage(image).inspect();
      return true;
    } catch (err) {
      if (status(err) === 404) return false;
      throw engineError(`inspecting image ${image}`, err);
    }
  }

  async imageLabels(image: string): Promise<Record<string, string> | undefined> {
    try {
      return (await this.docker.getImage(image).inspect()).Config?.Labels ?? {};
    } catch (err) {
      if (status(err) === 404) return undefined;
      throw engineError(`inspecting image ${image}`, err);
    }
  }

  async ensureImage(image: string, onProgress: (p: PullProgress) => void): Promise<void> {
    try {
      await this.docker.getImage(image).inspect();
      return;
    } catch (err) {
      if (status(err) !== 404) throw engineError(`inspecting image ${image}`, err);
    }
    // One of the runner's own: built here from its recipes, never asked of a registry.
    if (isOwnImage(image)) throw new ContainerError('image_missing', `${ownImageMissing(image, recipesDir())}${(await this.isPodman()) ? PODMAN_OWN_IMAGES : ''}`);
    onProgress({ status: 'not on this engine, asking its registry' });
    const auth = await this.credentials.authFor(image);
    if (auth.problem) onProgress({ status: `no credentials for ${auth.registry}: ${auth.problem}; asking without` });
    try {
      const stream = await this.docker.pull(image, auth.authconfig ? { authconfig: auth.authconfig } : {});
      await new Promise<void>((resolve, reject) => {
        const totals = new Map<string, { current: number; total: number }>();
        this.docker.modem.followProgress(
          stream,
          (err: Error | null, out: Array<{ error?: string }>) => {
            const failed = err ?? out.find((o) => o.error)?.error;
            if (failed) reject(failed instanceof Error ? failed : new Error(failed));
            else resolve();
          },
          (ev: { id?: string; status?: string; progressDetail?: { current?: number; total?: number } }) => {
            if (ev.id && ev.progressDetail?.total) totals.set(ev.id, { current: ev.progressDetail.current ?? 0, total: ev.progressDetail.total });
            let cur = 0;
            let tot = 0;
            for (const t of totals.values()) {
              cur += t.current;
              tot += t.total;
            }
            onProgress({ status: ev.status ?? '', ...(tot > 0 ? { fraction: cur / tot } : {}) });
          },
        );
      });
    } catch (err) {
      const reason = engineReason(errorMessage(err));
      if (isAuthRefusal(reason, auth.authconfig !== undefined)) throw new ContainerError('image_missing', pullRefused(image, auth.registry, reason, this.credentials.place(), auth.from, auth.problem));
      throw new ContainerError(
        'image_missing',
        `image ${image} is not present locally and could not be pulled from its registry (${firstLine(errorMessage(err)).trim()}): build it here (docker build -t ${image} ...), or pull it where its registry is reachable and load it here (docker save | docker load)`,
        { cause: err },
      );
    }
  }

  async buildImage(build: ImageBuild, onLine: (line: string) => void): Promise<void> {
    let stream: NodeJS.ReadableStream;
    try {
      stream = await this.docker.buildImage(build.context, {
        t: build.tag,
        dockerfile: build.dockerfile,
        buildargs: build.args,
        labels: build.labels,
        ...(build.target ? { target: build.target } : {}),
        // the layers of earlier builds are reused; intermediate containers go
        rm: true,
        forcerm: true,
      });
    } catch (err) {
      throw engineError(`building image ${build.tag}`, err);
    }
    const said: string[] = [];
    await new Promise<void>((resolve, reject) => {
      this.docker.modem.followProgress(
        stream,
        (err: Error | null, out: Array<{ error?: string }>) => {
          const failed = err?.message ?? out.find((o) => o.error)?.error;
          if (failed) reject(new ContainerError('image_build_failed', `building image ${build.tag} failed: ${firstLine(failed).trim()}${said.length ? `; its last lines:\n${said.slice(-15).join('\n')}` : ''}`));
          else resolve();
        },
        (ev: { stream?: string; status?: string; error?: string }) => {
          const text = ev.stream ?? ev.status ?? ev.error;
          if (!text) return;
          for (const line of text.split('\n')) {
            if (!line.trim()) continue;
            said.push(line);
            if (said.length > 50) said.shift();
            onLine(line);
          }
        },
      );
    });
  }

  async commitContainer(id: string, tag: string, changes: string[]): Promise<void> {
    const colon = tag.lastIndexOf(':');
    const [repo, version] = colon > tag.lastIndexOf('/') ? [tag.slice(0, colon), tag.slice(colon + 1)] : [tag, 'latest'];
    try {
      // the container has exited: nothing to pause (rootless Podman on cgroup v1 cannot pause)
      await this.docker.getContainer(id).commit({ repo, tag: version, changes, pause: false });
    } catch (err) {
      throw engineError(`committing a container as image ${tag}`, err);
    }
  }

  async untagImage(tag: string): Promise<void> {
    try {
      await this.docker.getImage(tag).remove();
    } catch (err) {
      if (status(err) !== 404) throw engineError(`removing the image name ${tag}`, err);
    }
  }

  async imageConfig(image: string): Promise<ImageConfig | undefined> {
    let c: { User?: string; WorkingDir?: string; Env?: string[] | null; Cmd?: string[] | string | null; Entrypoint?: string[] | string | null };
    let id: string;
    try {
      const info = await this.docker.getImage(image).inspect();
      c = info.Config ?? {};
      id = info.Id;
    } catch (err) {
      if (status(err) === 404) return undefined;
      throw engineError(`inspecting image ${image}`, err);
    }
    const list = (v: string[] | string | null | undefined): string[] | undefined => (Array.isArray(v) ? v : typeof v === 'string' ? ['/bin/sh', '-c', v] : undefined);
    const env: Record<string, string> = {};
    for (const e of c.Env ?? []) {
      const eq = e.indexOf('=');
      if (eq > 0) env[e.slice(0, eq)] = e.slice(eq + 1);
    }
    return { id, user: c.User ?? '', workingDir: c.WorkingDir ?? '', env, cmd: list(c.Cmd), entrypoint: list(c.Entrypoint) };
  }

  /** The engine runtime and process caps of the container's sandbox: runc's defaults, or gVisor's (gvisor.ts). */
  private async sandboxSettings(spec: ContainerSpec): Promise<SandboxSettings> {
    if (spec.isolation !== 'gvisor') return { cgroupPids: spec.pids };
    const runtime = await this.gvisor.runtime([spec.labels[LABELS.stepId] ?? spec.name], spec.image);
    return { runtime, ...gvisorPidLimits(spec.pids) };
  }

  async checkHostPaths(paths: string[]): Promise<void> {
    const mounts = await (this.ownMounts ??= this.readOwnMounts());
    if (!mounts) return;
    const problems = paths.map((p) => hostPathProblem(p, mounts)).filter((p) => p !== undefined);
    if (problems.length) throw new ContainerError('host_path', problems.join('\n'));
  }

  /** The mounts of the container the runner itself runs in; undefined on a host, or in a container of another engine. */
  private async readOwnMounts(): Promise<OwnMount[] | undefined> {
    const id = ownContainerId(await readFile('/proc/self/mountinfo', 'utf8').catch(() => ''));
    if (!id) return undefined;
    try {
      const info = await this.docker.getContainer(id).inspect();
      return info.Mounts.map((m) => ({ type: m.Type, source: m.Source, destination: m.Destination }));
    } catch {
      return undefined;
    }
  }

  async create(spec: ContainerSpec): Promise<ContainerHandle> {
    if (spec.warm) {
      if (!spec.warm.ended()) {
        try {
          return spec.warm.claim(spec);
        } catch (err) {
          // claimed and never begun: it goes now, not with the runner (its network could not be removed while it waits)
          await spec.warm.discard().catch(() => undefined);
          throw err;
        }
      }
      // it ended while it waited: the step's container is made as it would have been
      await spec.warm.discard().catch(() => undefined);
      const { warm: _gone, ...cold } = spec;
      spec = cold;
    }
    await this.checkHostPaths(spec.mounts.flatMap((m) => [m.source, ...(m.overlay ? [m.overlay.upper, m.overlay.work] : [])]));
    const secrets = spec.secretEnv && Object.keys(spec.secretEnv).length ? spec.secretEnv : undefined;
    if ((secrets || spec.holdUntil) && spec.stdin !== undefined) throw new ContainerError('docker_failed', `a container cannot be given both stdin and ${secrets ? 'secrets' : 'a held start'} (${spec.name}): a bug in the runner`);
    // the runtime is asked once a container (docker info, under gVisor), even one made twice
    const settings = await this.sandboxSettings(spec);
    // Podman sets a process limit of its own when none is given, higher than an engine may raise to: the host's, as Docker's
    const nproc = settings.nproc === undefined && (await this.isPodman()) ? ownProcessLimit() : undefined;
    if (nproc !== undefined) settings.nproc = nproc;
    const c = await this.createContainer(spec, settings, secrets, spec.holdUntil !== undefined);
    const hold = spec.holdUntil;
    if ((secrets || hold) && !(await hasShell(c))) {
      if (secrets) {
        await c.remove({ force: true }).catch(() => undefined);
        throw new ContainerError(
          'no_shell',
          `image ${spec.image} has no /bin/sh, which a step given secrets (${Object.keys(secrets).join(', ')}) needs: they reach its command through a /bin/sh prelude that reads them on its standard input, so that they never show in the container's config (docker inspect). Use an image with a POSIX shell at /bin/sh, or give the step no secrets:`,
        );
      }
      if (hold) {
        // held without a prelude: made again as it is, and its start waits for the hold
        await c.remove({ force: true }).catch(() => undefined);
        const plain = await this.createContainer(spec, settings, undefined, false);
        return new DockerContainer(plain, this.docker, undefined, this.sandboxOf(plain, spec), { start: hold }, this.oomUnreported);
      }
    }
    const stdin = secrets || hold ? encodeSecretEnv(secrets ?? {}) : spec.stdin;
    return new DockerContainer(c, this.docker, stdin, this.sandboxOf(c, spec), hold ? { stdin: hold } : undefined, this.oomUnreported);
  }

  /**
   * A container of `spec`'s shape made and started now, its command the warm prelude (secret-env.ts), which waits
   * for a step's variables and command on its standard input. Attached now: the runner's death ends that input, and
   * the prelude then exits having run nothing.
   */
  async createHeld(spec: ContainerSpec): Promise<HeldContainer> {
    await this.checkHostPaths(spec.mounts.flatMap((m) => [m.source, ...(m.overlay ? [m.overlay.upper, m.overlay.work] : [])]));
    const settings = await this.sandboxSettings(spec);
    const nproc = settings.nproc === undefined && (await this.isPodman()) ? ownProcessLimit() : undefined;
    if (nproc !== undefined) settings.nproc = nproc;
    const image = await this.imageConfig(spec.image);
    if (!image) throw new ContainerError('docker_failed', `image ${spec.image} is not on the engine: a warm container of it cannot be made`);
    const { secretEnv: _s, holdUntil: _h, stdin: _i, warm: _w, ...shape } = spec;
    const c = await this.createContainer({ ...shape, cmd: [], env: {} }, settings, undefined, 'warm');
    // with its volumes: an overlay mount (a cache read through a throw-away layer) is an anonymous volume of its own
    const gone = () => c.remove({ force: true, v: true }).then(() => undefined, () => undefined);
    let stream: NodeJS.ReadableStream;
    try {
      if (!(await hasShell(c))) throw new ContainerError('no_shell', `image ${spec.image} has no /bin/sh, which a warm container waits in: its steps start cold`);
      stream = await attachWithInput(c);
      await c.start();
    } catch (err) {
      await gone();
      throw err instanceof ContainerError ? err : engineError('starting a warm container', err);
    }
    let ended = false;
    void c.wait({ condition: 'not-running' }).then(() => (ended = true), () => (ended = true));
    let claimed = false;
    const sandbox = this.sandboxOf(c, spec);
    return {
      id: c.id,
      ended: () => ended,
      claim: (step) => {
        if (claimed || ended) throw new Error('a warm container is claimed once, while it waits: a bug in the runner');
        claimed = true;
        const argv = [...(image.entrypoint ?? []), ...(step.cmd.length ? step.cmd : (image.cmd ?? []))];
        const input = encodeWarmStart({ ...step.env, ...(step.secretEnv ?? {}) }, argv);
        return new DockerContainer(c, this.docker, input, sandbox, step.holdUntil ? { stdin: step.holdUntil } : undefined, this.oomUnreported, stream);
      },
      discard: async () => {
        ended = true;
        (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.();
        await gone();
      },
    };
  }

  private sandboxOf(c: Docker.Container, spec: ContainerSpec): ConstructorParameters<typeof DockerContainer>[3] {
    if (spec.isolation !== 'gvisor') return undefined;
    return { nproc: gvisorPidLimits(spec.pids).nproc, tasks: (pid: number) => this.gvisor.tasks(c.id, pid) };
  }

  /** `prelude`: the command starts through the secrets prelude (secrets, or a command held until its way out is up), its input on stdin */
  /** `warm`: a warm container's, waiting in the warm prelude for a step's command (createHeld) */
  private async createContainer(spec: ContainerSpec, settings: SandboxSettings, secrets: Record<string, string> | undefined, prelude: boolean | 'warm'): Promise<Docker.Container> {
    const viaPrelude = secrets !== undefined || prelude !== false;
    // secrets go on its standard input, to the prelude that exports them and execs the command
    const command = prelude === 'warm' ? { Entrypoint: ['/bin/sh', '-c', WARM_PRELUDE, WARM_PRELUDE_NAME], Cmd: [] } : viaPrelude ? await this.throughPrelude(spec) : { Cmd: spec.cmd };
    const stdin = viaPrelude ? '' : spec.stdin;
    const podman = await this.isPodman();
    // on Podman a step's IPv6 is off, as Docker has it (podman.ts podmanSysctls)
    const sysctls = podman ? podmanSysctls(spec) : spec.sysctls;
    let c: Docker.Container;
    try {
      c = await this.docker.createContainer({
        name: spec.name,
        Image: spec.image,
        ...command,
        Env: Object.entries(spec.env).map(([k, v]) => `${k}=${v}`),
        WorkingDir: spec.workingDir,
        User: spec.user,
        Labels: spec.labels,
        AttachStdout: true,
        AttachStderr: true,
        Tty: false,
        // stdin only to hand something in (ended at once), never a terminal
        OpenStdin: stdin !== undefined,
        StdinOnce: stdin !== undefined,
        AttachStdin: stdin !== undefined,
        NetworkDisabled: spec.network === 'none',
        HostConfig: {
          Binds: [...spec.mounts.filter((m) => !m.overlay).map((m) => `${m.source}:${m.target}:${m.readOnly ? 'ro' : 'rw'}`), ...(podman ? spec.mounts.filter((m) => m.overlay).map(podmanOverlayBind) : [])],
          ...(!podman && spec.mounts.some((m) => m.overlay) ? { Mounts: spec.mounts.filter((m) => m.overlay).map(overlayMount) } : {}),
          Memory: spec.memoryBytes,
          MemorySwap: spec.memoryBytes,
          NanoCpus: Math.round(spec.cpus * 1e9),
          PidsLimit: settings.cgroupPids,
          NetworkMode: spec.network,
          ...(spec.dns ? { Dns: spec.dns } : {}),
          ...(spec.hosts ? { ExtraHosts: Object.entries(spec.hosts).map(([name, address]) => `${name}:${address}`) } : {}),
          ...(sysctls ? { Sysctls: sysctls } : {}),
          Init: true,
          CapDrop: ['ALL'],
          ...(spec.capAdd.length ? { CapAdd: spec.capAdd } : {}),
          SecurityOpt: ['no-new-privileges'],
          Ulimits: [
            { Name: 'nofile', Soft: spec.openFiles, Hard: spec.openFiles },
            { Name: 'fsize', Soft: spec.fileSizeBytes, Hard: spec.fileSizeBytes },
            ...(settings.nproc !== undefined ? [{ Name: 'nproc', Soft: settings.nproc, Hard: settings.nproc }] : []),
          ],
          ...(settings.runtime ? { Runtime: settings.runtime } : {}),
          ReadonlyRootfs: spec.readOnlyRoot,
          ...(spec.readOnlyRoot ? { Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=256m,mode=1777' } } : {}),
          AutoRemove: false,
          // The runner reads the output through attach; the engine keeps no second copy on disk.
          LogConfig: { Type: 'none', Config: {} },
          Privileged: false,
        },
        ...(spec.networkAliases?.length ? { NetworkingConfig: { EndpointsConfig: { [spec.network]: { Aliases: spec.networkAliases } } } } : {}),
      });
    } catch (err) {
      throw engineError(`creating the container for image ${spec.image}`, err);
    }
    return c;
  }

  /**
   * The prelude in front of what the container would run: the image's entrypoint and the step's
   * command (the image's own when the step has none), as the engine would join them.
   */
  private async throughPrelude(spec: ContainerSpec): Promise<{ Entrypoint: string[]; Cmd: string[] }> {
    let config: { Entrypoint?: string[] | string | null; Cmd?: string[] | string | null };
    try {
      config = (await this.docker.getImage(spec.image).inspect()).Config ?? {};
    } catch (err) {
      throw engineError(`inspecting image ${spec.image}`, err);
    }
    const list = (v: string[] | string | null | undefined): string[] => (Array.isArray(v) ? v : typeof v === 'string' ? ['/bin/sh', '-c', v] : []);
    return { Entrypoint: preludeArgv(list(config.Entrypoint)), Cmd: spec.cmd.length ? spec.cmd : list(config.Cmd) };
  }

  async listByLabels(labels: Record<string, string>): Promise<Array<{ id: string; labels: Record<string, string> }>> {
    const list = await this.docker.listContainers({
      all: true,
      filters: { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) },
    });
    return list.map((c) => ({ id: c.Id, labels: c.Labels ?? {} }));
  }

  async removeByLabels(labels: Record<string, string>): Promise<number> {
    const filters = { label: labelFilters(labels) };
    const list = await this.docker.listContainers({ all: true, filters });
    await Promise.all(list.map((c) => new DockerContainer(this.docker.getContainer(c.Id), this.docker).remove()));
    // A run on --engine swarm left job services (and their secrets and configs): on a swarm manager they go too,
    // whichever engine the command that recovers runs with. Elsewhere the engine says it is no manager: nothing to do.
    const services = await this.docker.listServices({ filters }).catch(() => []);
    await Promise.all(services.map((sv) => this.docker.getService(sv.ID).remove().catch(() => undefined)));
    if (services.length) await removeSwarmFiles(this.docker, filters);
    return list.length + services.length;
  }

  async createNetwork(spec: NetworkSpec): Promise<{ subnet: string }> {
    let id: string;
    try {
      const podman = this.networks === 'bridge' && (await this.isPodman());
      if (podman) id = await this.podmanNetwork(spec);
      else id = (await this.docker.createNetwork({
        Name: spec.name,
        Driver: this.networks,
        Internal: spec.internal,
        CheckDuplicate: true,
        Labels: spec.labels,
        ...(this.networks === 'overlay' ? { Attachable: true } : spec.isolated ? { Options: isolatedNetworkOptions(await this.isPodman()) } : {}),
      })).id;
    } catch (err) {
      throw engineError(`creating network ${spec.name}`, err);
    }
    const subnetOf = async () => {
      const info = await this.docker.getNetwork(id).inspect();
      return (info.IPAM?.Config as Array<{ Subnet?: string }> | undefined)?.find((c) => c.Subnet && c.Subnet.includes('.'))?.Subnet;
    };
    let subnet = await subnetOf();
    // a swarm allocates an overlay's subnet a moment after making it
    for (let i = 0; !subnet && this.networks === 'overlay' && i < 40; i++) {
      await new Promise((r) => setTimeout(r, 250));
      subnet = await subnetOf();
    }
    if (!subnet) {
      await this.removeNetwork(id);
      throw new ContainerError('docker_failed', `docker gave network ${spec.name} no IPv4 subnet: check the engine's default-address-pools`);
    }
    return { subnet };
  }

  /** On Podman, through its own API: a step's network needs its name server off (podmanNetworkBody), which Docker's API cannot say. */
  private async podmanNetwork(spec: NetworkSpec): Promise<string> {
    const made = await new Promise<{ id?: string }>((resolve, reject) =>
      this.docker.modem.dial(
        { path: '/v4.0.0/libpod/networks/create', method: 'POST', options: { _body: podmanNetworkBody(spec) }, statusCodes: { 200: true, 409: 'network already exists', 500: 'server error' } },
        (err: unknown, data: unknown) => (err ? reject(err) : resolve(data as { id?: string })),
      ),
    );
    if (!made.id) throw new Error(`Podman made network ${spec.name} without saying its id`);
    return made.id;
  }

  async removeNetwork(name: string): Promise<void> {
    // an overlay's last task (a step's, on a node) leaves it a few seconds after its service went: asked again meanwhile
    for (let tries = this.networks === 'overlay' ? OVERLAY_BUSY_TRIES : 1; ; ) {
      try {
        await this.docker.getNetwork(name).remove();
        return;
      } catch (err) {
        // a swarm's overlay already gone is a 500 saying "not found", not a 404
        if (status(err) === 404 || /network \S+ not found/.test(errorMessage(err))) return;
        if (--tries <= 0 || !overlayBusy(err)) throw engineError(`removing network ${name}`, err);
        await new Promise((r) => setTimeout(r, 250));
      }
    }
  }

  async networkGateways(network?: string): Promise<string[]> {
    try {
      const list = (await this.docker.listNetworks()).filter((n) => network === undefined || n.Name === network || n.Id === network);
      return networkGatewaysOf(list as NetworkFacts[], os.networkInterfaces());
    } catch (err) {
      throw engineError('listing networks', err);
    }
  }

  async removeNetworksByLabels(labels: Record<string, string>): Promise<number> {
    const list = await this.docker.listNetworks({ filters: { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) } });
    for (const n of list) {
      // a network in use cannot go: its containers (a gateway, a step) go first
      const info = await this.docker.getNetwork(n.Id).inspect().catch(() => undefined);
      await Promise.all(Object.keys(info?.Containers ?? {}).map((id) => new DockerContainer(this.docker.getContainer(id), this.docker).remove()));
      await this.removeNetwork(n.Id);
    }
    return list.length;
  }
}

/**
 * Label filters for what is removed by its labels. A label without a value is refused: a swarm's service filter
 * `key=` matches the key with any value, so it would remove every service of the home (a live run's step among
 * them). Pure.
 */
export function labelFilters(labels: Record<string, string>): string[] {
  const empty = Object.entries(labels).find(([, v]) => v === '');
  if (empty) throw new ContainerError('docker_failed', `removing by label ${empty[0]} with no value would match any value: a bug in the runner`);
  return Object.entries(labels).map(([k, v]) => `${k}=${v}`);
}

/** An overlay is asked to go this many times, 250 ms apart, while a task that is going still holds it (about 10 s). */
const OVERLAY_BUSY_TRIES = 40;

/** How an engine says a network still has a member (a swarm: a task of a service being removed). Pure. */
export function overlayBusy(err: unknown): boolean {
  return /has active endpoints|is in use by/i.test(errorMessage(err));
}

class DockerContainer implements ContainerHandle {
  constructor(
    private readonly c: Docker.Container,
    private readonly docker: Docker,
    /** handed to its standard input when attached (the engine holds it until the container starts); a promise: once it resolves */
    private readonly stdin?: string | Promise<string>,
    /** under gVisor: its process cap (RLIMIT_NPROC) and how to ask the sandbox's kernel how many tasks it holds */
    private readonly sandbox?: { nproc: number; tasks: (sandboxPid: number) => Promise<number | undefined> },
    /** what its command waits for (ContainerSpec.holdUntil): its standard input is written then, or its start waits */
    private readonly hold?: { stdin?: Promise<void>; start?: Promise<void> },
    /** the engine never reports a kill at the memory cap (ExitState.oomUnreported) */
    private readonly oomUnreported = false,
    /** a warm container's: attached (with its input) and started when it was made */
    private readonly attached?: NodeJS.ReadableStream,
  ) {}

  get id(): string {
    return this.c.id;
  }

  async attach(onStdout: OutputHandler, onStderr: OutputHandler): Promise<{ ended: Promise<void>; close: () => void }> {
    const withStdin = this.stdin !== undefined;
    const stream = this.attached ?? (withStdin ? await attachWithInput(this.c) : ((await this.c.attach({ stream: true, stdout: true, stderr: true })) as NodeJS.ReadableStream));
    if (withStdin) {
      const input = stream as unknown as NodeJS.WritableStream;
      const given = this.stdin!;
      const write = () => {
        if (typeof given === 'string') {
          input.write(given);
          input.end();
        } else {
          // given later (a warm gateway's config, at its claim); never given, the input ends empty
          given.then(
            (text) => {
              input.write(text);
              input.end();
            },
            () => input.end(),
          );
        }
      };
      // held: the prelude waits for its input; never given (the way did not come up), the runner stops the container
      if (this.hold?.stdin) this.hold.stdin.then(write, () => undefined);
      else write();
    }
    const out = new PassThrough();
    const err = new PassThrough();
    let waiting = 0;
    const handle = (fn: OutputHandler) => (chunk: Buffer) => {
      const slow = fn(chunk);
      if (!slow) return;
      if (waiting++ === 0) stream.pause();
      void slow.finally(() => {
        if (--waiting === 0) stream.resume();
      });
    };
    out.on('data', handle(onStdout));
    err.on('data', handle(onStderr));
    this.c.modem.demuxStream(stream, out, err);
    const ended = new Promise<void>((resolve) => {
      const done = () => {
        out.end();
        err.end();
        resolve();
      };
      stream.on('end', done);
      stream.on('close', done);
      stream.on('error', done);
    });
    // A container removed before it started never ends its attach stream: the caller closes it.
    return { ended, close: () => (stream as NodeJS.ReadableStream & { destroy?: () => void }).destroy?.() };
  }

  async start(): Promise<void> {
    // a warm container runs already: its command begins once its input is written (attach)
    if (this.attached) return;
    if (this.hold?.start && !(await this.hold.start.then(() => true, () => false))) {
      throw new ContainerError('way_failed', "the step's way out did not come up: it was not started");
    }
    try {
      await this.c.start();
    } catch (err) {
      throw engineError('starting the container', err);
    }
  }

  async wait(signal?: AbortSignal): Promise<void> {
    // next-exit: called before start, a plain wait would return at once for a created container.
    await this.c.wait({ condition: 'next-exit', ...(signal ? { abortSignal: signal } : {}) });
  }

  async waitNotRunning(): Promise<void> {
    await this.c.wait({ condition: 'not-running' });
  }

  async inspect(): Promise<ExitState> {
    const info = await this.c.inspect();
    return { exitCode: info.State.ExitCode, oomKilled: info.State.OOMKilled, ...(this.oomUnreported ? { oomUnreported: true } : {}) };
  }

  private initPid?: Promise<number | undefined>;
  private pidsEventsFile?: string | null;
  private asking?: Promise<unknown> | undefined;
  private askedAt = 0;
  /** under gVisor: the sandbox was seen holding as many tasks as its cap */
  private atCap = false;

  /**
   * The cgroup's count of refused forks; under gVisor also 1 once the
   * sandbox's kernel holds as many tasks as RLIMIT_NPROC lets it, where it
   * refuses the next fork (the cgroup, a backstop sized for the sandbox's own
   * threads, does not see those refusals).
   */
  async pidsLimitHits(): Promise<number | undefined> {
    this.initPid ??= this.c.inspect().then((i) => i.State.Pid || undefined, () => undefined);
    const pid = await this.initPid;
    // not started yet, or already gone: asked again next time
    if (!pid) return (this.initPid = undefined);
    if (this.pidsEventsFile === undefined) this.pidsEventsFile = await findPidsEvents(pid).catch(() => null);
    const text = this.pidsEventsFile ? await readFile(this.pidsEventsFile, 'utf8').catch(() => undefined) : undefined;
    const m = text ? /^max (\d+)/m.exec(text) : null;
    const refused = m ? Number(m[1]) : undefined;
    if (!this.sandbox) return refused;
    // one question at a time, at most one a second: runsc takes some tens of milliseconds of CPU to answer, and
    // a sandbox at its cap stays there (its forks keep failing), so a slower look still sees it
    if (!this.asking && Date.now() - this.askedAt >= 1000) {
      this.askedAt = Date.now();
      this.asking = this.sandbox.tasks(pid).then((n) => (n !== undefined && n >= this.sandbox!.nproc ? (this.atCap = true) : undefined), () => undefined).finally(() => (this.asking = undefined));
    }
    if (this.asking) await this.asking;
    return this.atCap ? Math.max(refused ?? 0, 1) : refused;
  }

  async stop(graceSeconds: number): Promise<void> {
    try {
      await this.c.stop({ t: graceSeconds });
    } catch (err) {
      if (status(err) !== 304 && status(err) !== 404) throw engineError('stopping the container', err);
    }
  }

  async kill(): Promise<void> {
    try {
      await this.c.kill();
    } catch (err) {
      if (status(err) !== 409 && status(err) !== 404 && status(err) !== 304) throw engineError('killing the container', err);
    }
  }

  async connect(network: string, aliases: string[]): Promise<void> {
    try {
      // dockerode has no container-side connect: the network's API does it
      await this.docker.getNetwork(network).connect({ Container: this.c.id, EndpointConfig: { Aliases: aliases } });
    } catch (err) {
      throw engineError(`connecting the container to network ${network}`, err);
    }
  }

  async addressOn(network: string): Promise<string | undefined> {
    // the network's view, not the container's: the engine answers it while the container is still starting (its
    // endpoint, and so its address, is made early in the start), where inspecting the container waits for the start
    const info = await this.docker.getNetwork(network).inspect();
    const ip = (info.Containers as Record<string, { IPv4Address?: string }> | undefined)?.[this.c.id]?.IPv4Address?.replace(/\/\d+$/, '');
    return ip ? ip : undefined;
  }

  async remove(): Promise<void> {
    try {
      await this.c.remove({ force: true, v: true });
    } catch (err) {
      // 404: already gone; 409: removal already in progress.
      if (status(err) !== 404 && status(err) !== 409) throw engineError('removing the container', err);
    }
  }
}

/**
 * Attaches to the container's output and its input (the connection taken over). The request has an empty body:
 * dockerode's sends its options as one, which Docker reads as the request's and Podman hands to the container as
 * the first bytes of its input (the secrets prelude then read `{"stream":true,...` for a secret's name).
 */
function attachWithInput(c: Docker.Container): Promise<NodeJS.ReadableStream> {
  return new Promise((resolve, reject) =>
    c.modem.dial(
      {
        path: `/containers/${c.id}/attach?`,
        method: 'POST',
        options: { stream: true, stdout: true, stderr: true, stdin: true },
        file: Buffer.alloc(0),
        headers: { ...(c.modem as { headers?: Record<string, string> }).headers, 'Content-Type': 'application/json' },
        isStream: true,
        hijack: true,
        openStdin: true,
        statusCodes: { 101: true, 200: true, 404: 'no such container', 500: 'server error' },
      },
      (err: unknown, stream: NodeJS.ReadableStream) => (err ? reject(err) : resolve(stream)),
    ),
  );
}

/** Whether the container has /bin/sh (a link to one counts), asked before it starts. */
async function hasShell(c: Docker.Container): Promise<boolean> {
  try {
    // the answer is a stream (of no body): left unread, it holds its connection, and the process, open
    const answer = (await c.infoArchive({ path: '/bin/sh' })) as unknown as NodeJS.ReadableStream & { destroy?: () => void };
    answer.destroy?.();
    return true;
  } catch (err) {
    // anything but "no such path" is not this question's answer: the start will say what is wrong
    return status(err) !== 404;
  }
}

/** The container's pids cgroup `pids.events`, found through its init process (cgroup v1 and v2). */
async function findPidsEvents(pid: number): Promise<string | null> {
  const lines = (await readFile(`/proc/${pid}/cgroup`, 'utf8')).split('\n');
  const v1 = lines.find((l) => /^\d+:([^:]*,)?pids(,[^:]*)?:/.test(l));
  if (v1) return path.join('/sys/fs/cgroup/pids', v1.slice(v1.lastIndexOf(':') + 1), 'pids.events');
  const v2 = lines.find((l) => l.startsWith('0::'));
  return v2 ? path.join('/sys/fs/cgroup', v2.slice(3), 'pids.events') : null;
}

/** The secrets and configs (a swarm step's token and transfer helper) whose labels match: gone with their job. */
export async function removeSwarmFiles(api: Docker, filters: { label: string[] }): Promise<void> {
  const secrets = await api.listSecrets({ filters }).catch(() => []);
  const configs = await api.listConfigs({ filters }).catch(() => []);
  await Promise.all([...secrets.map((x) => api.getSecret(x.ID).remove().catch(() => undefined)), ...configs.map((x) => api.getConfig(x.ID).remove().catch(() => undefined))]);
}

/** The runner's directory when its image recipes are there (a checkout), else undefined (a runner in its own image). */
export function recipesDir(): string | undefined {
  const root = packageRoot();
  return existsSync(path.join(root, 'images/build.sh')) && existsSync(path.join(root, 'Makefile')) ? root : undefined;
}

function engineError(what: string, err: unknown): ContainerError {
  const hint = podmanHint(errorMessage(err));
  return new ContainerError('docker_failed', `docker failed ${what}: ${firstLine(errorMessage(err))}${hint ? `: ${hint}` : ''}`, { cause: err });
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}

/**
 * An overlay as an anonymous volume of the engine's local driver: the engine
 * mounts it (the runner needs no privilege for it), and removing the
 * container with its volumes unmounts it.
 */
function overlayMount(m: Mount): Docker.MountSettings {
  return {
    Type: 'volume',
    // no name: an anonymous volume, removed with the container
    Source: '',
    Target: m.target,
    ReadOnly: false,
    VolumeOptions: {
      NoCopy: true,
      Labels: {},
      DriverConfig: { Name: 'local', Options: { type: 'overlay', device: 'overlay', o: `lowerdir=${m.source},upperdir=${m.overlay!.upper},workdir=${m.overlay!.work}` } },
    },
  };
}
