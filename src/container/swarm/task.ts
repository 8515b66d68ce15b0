/**
 * A swarm step: a service of one replica that is never restarted (restart
 * policy none), placed by its limits and reservations, followed through its
 * logs. A task's state and its node's state are watched, since a job task on
 * a node that went down reports `running` for as long as anyone watched.
 */
import Docker from 'dockerode';
import { ContainerError, errorMessage } from '../../common/errors.js';
import { removeSwarmFiles } from '../local/docker.js';
import type { AuthConfig } from '../registry-auth.js';
import { nodePullHint } from '../registry-names.js';
import type { ContainerHandle, ContainerSpec, ExitState, OutputHandler } from '../runtime.js';
import { encodeSecretEnv, preludeArgv } from '../secret-env.js';
import { nameTaken, serviceName } from './names.js';

/** The attachable overlay network of swarm steps with `network: bridge` (it has a way out, and to the runner's transfer). */
export const SWARM_NETWORK = 'runner-swarm';
const POLL_MS = 500;
/** a task no node takes within this long ends the step (no node has the resources or the placement) */
const PENDING_MS = 60_000;
/** how long the manager may not answer before a step is given up */
const MANAGER_GONE_MS = 30_000;
/**
 * What a step's transfer wrapper prints last, on stdout and on stderr, once the step's work is sent back. When the
 * task has ended and both streams' last bytes are this marker, the runner has all of the step's output and stops
 * following its logs (a finished task's log stream does not end by itself). Never passed on. A step that prints it
 * itself gains nothing: a marker counts only while it is the last thing on both streams.
 */
export const END_MARKER = '\x1erunner-transfer: end\x1e';
/** how long after its task ended a step's logs are followed when its last bytes have not come (no marker) */
const LINGER_MS = 1500;
const TERMINAL = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);
/** a step's secrets, as the prelude reads them: a swarm secret (a tmpfs file only the step's user reads), never the job's env */
const SECRET_ENV_FILE = 'runner-secret-env';

interface TaskInfo {
  ID: string;
  NodeID?: string;
  Status?: { State?: string; Err?: string; Message?: string; ContainerStatus?: { ExitCode?: number; ContainerID?: string } };
  CreatedAt?: string;
}

/**
 * A directory the step fills (its workspace, fetched): any image and any uid can, since it is a mount of its own,
 * writable by all (mode 1777, as /tmp), and what the image has beside it (its /home/agent) stays. A tmpfs, by the
 * local volume driver rather than a tmpfs mount: the engine mounts those noexec, and a workspace holds programs
 * (./gradlew, node_modules/.bin). Its pages count toward the step's memory, so it is no bigger than that (a tmpfs of
 * size 0 would be unbounded). Named, with the run's labels: a node makes a volume with options before the task's
 * container, and keeps it after (unmounted, empty: its content went with the tmpfs); an anonymous one would be made
 * twice and one left unnamed. `name` undefined: anonymous (a plain container, which removes it with itself). Pure.
 */
export function scratchMount(target: string, memoryBytes: number, name?: string, labels: Record<string, string> = {}): Record<string, unknown> {
  return {
    Type: 'volume',
    Target: target,
    ...(name ? { Source: name } : {}),
    VolumeOptions: {
      Labels: { ...labels, [SCRATCH_LABEL]: 'true' },
      DriverConfig: { Name: 'local', Options: { type: 'tmpfs', device: 'tmpfs', o: `size=${memoryBytes > 0 ? memoryBytes : 4 * 1024 ** 3},mode=1777,nosuid,nodev` } },
    },
  };
}

/** The label of a swarm step's workspace volumes: what a node keeps of them goes with `docker volume prune --filter label=dev.runner.scratch` */
export const SCRATCH_LABEL = 'dev.runner.scratch';

export class SwarmTask implements ContainerHandle {
  private service: Docker.Service | undefined;
  private serviceId: string | undefined;
  private serviceSpec: Docker.CreateServiceOptions | undefined;
  private readonly name: string;
  private ended: ExitState | undefined;
  private readonly done: Promise<ExitState>;
  private finish!: (s: ExitState) => void;
  private started: (() => void) | undefined;
  private readonly startedP = new Promise<void>((r) => (this.started = r));
  private removed = false;
  /** the step's end was seen in its logs: the task is asked for at once, not at the next poll */
  private wake: (() => void) | undefined;
  /** the node its task was given to, once known: a step stopped (timeout, cancel) says where it ran too */
  private hostname: string | undefined;

  constructor(
    private readonly api: Docker,
    private readonly spec: ContainerSpec,
    /** the image as the pipeline names it (spec.image may be its ID, or its digest in the registry) */
    private readonly imageName: string,
    private readonly registry?: string,
    /** what the job's node pulls its image with (the service's X-Registry-Auth); absent: no credentials */
    private readonly pullAuth?: AuthConfig,
  ) {
    this.done = new Promise((r) => (this.finish = r));
    this.name = serviceName(spec.name);
  }

  get id(): string {
    return this.name;
  }

  async attach(onStdout: OutputHandler, onStderr: OutputHandler): Promise<{ ended: Promise<void>; close: () => void }> {
    let stream: NodeJS.ReadableStream & { destroy?: () => void } | undefined;
    let closed = false;
    const ended = (async () => {
      await this.startedP;
      // followed until the task ends; again when the job was placed anew (placeAgain)
      for (let followed: Docker.Service | undefined; !closed && this.service && this.service !== followed; ) {
        followed = this.service;
        stream = (await followed.logs({ follow: true, stdout: true, stderr: true })) as unknown as NodeJS.ReadableStream & { destroy?: () => void };
        const ends = new EndWatch(() => this.wake?.());
        const out = { write: (b: Buffer) => void ends.pass(0, b, onStdout) } as unknown as NodeJS.WritableStream;
        const err = { write: (b: Buffer) => void ends.pass(1, b, onStderr) } as unknown as NodeJS.WritableStream;
        this.api.modem.demuxStream(stream, out, err);
        const streamEnd = new Promise<void>((r) => {
          stream!.on('end', r);
          stream!.on('close', r);
          stream!.on('error', () => r());
        });
        // a finished task's log stream does not end by itself: once the task ended, it is followed until both
        // streams ended with the wrapper's marker (the step's last bytes are here), or for LINGER_MS at most
        let lingering: NodeJS.Timeout | undefined;
        const lingered = this.done.then(() => Promise.race([ends.both(), new Promise((r) => (lingering = setTimeout(r, LINGER_MS)))]));
        await Promise.race([streamEnd, lingered]);
        clearTimeout(lingering);
        stream.destroy?.();
        // a job being placed anew has its next service in a moment
        for (let i = 0; i < 40 && !this.ended && !closed && this.service === followed; i++) await new Promise((r) => setTimeout(r, 250));
      }
    })().catch(() => undefined);
    return { ended, close: () => ((closed = true), this.started?.(), stream?.destroy?.()) };
  }

  async start(): Promise<void> {
    const s = this.spec;
    // nothing holds a service's command: it is not made before its way out is up
    if (s.holdUntil && !(await s.holdUntil.then(() => true, () => false))) throw new ContainerError('way_failed', 'the step\'s way out did not come up: it was not started');
    const labels = s.labels;
    const secretEnv = s.secretEnv && Object.keys(s.secretEnv).length ? s.secretEnv : undefined;
    const files = [...(s.files ?? []), ...(secretEnv ? [{ target: SECRET_ENV_FILE, data: encodeSecretEnv(secretEnv), secret: true }] : [])];
    const command = secretEnv ? preludeArgv(s.cmd, `/run/secrets/${SECRET_ENV_FILE}`) : s.cmd;
    const secrets: Array<Record<string, unknown>> = [];
    const configs: Array<Record<string, unknown>> = [];
    try {
      for (const f of files) {
        const name = `${this.name}-${f.secret ? 's' : 'c'}${secrets.length + configs.length}`;
        const data = Buffer.from(f.data).toString('base64');
        if (f.secret) {
          const { id } = (await this.api.createSecret({ Name: name, Data: data, Labels: labels })) as unknown as { id: string };
          secrets.push({ SecretID: id, SecretName: name, File: { Name: f.target, UID: s.user.split(':')[0], GID: s.user.split(':')[1] ?? '0', Mode: 0o400 } });
        } else {
          const { id } = (await this.api.createConfig({ Name: name, Data: data, Labels: labels })) as unknown as { id: string };
          configs.push({ ConfigID: id, ConfigName: name, File: { Name: f.target, UID: '0', GID: '0', Mode: 0o555 } });
        }
      }
      this.serviceSpec = {
        Name: this.name,
        Labels: labels,
        TaskTemplate: {
          ContainerSpec: {
            Image: s.image,
            Command: command,
            Env: Object.entries(s.env).map(([k, v]) => `${k}=${v}`),
            Dir: s.workingDir,
            User: s.user,
            Labels: labels,
            Init: true,
            ReadOnly: s.readOnlyRoot,
            Mounts: [
              ...(s.readOnlyRoot ? [{ Type: 'tmpfs', Target: '/tmp', TmpfsOptions: { SizeBytes: 256 * 1024 ** 2, Mode: 0o1777 } }] : []),
              ...(s.scratch ?? []).map((target, i) => scratchMount(target, s.memoryBytes, `${this.name}-scratch${i}`, labels)),
            ],
            CapabilityDrop: ['ALL'],
            ...(s.capAdd.length ? { CapabilityAdd: s.capAdd } : {}),
            Ulimits: [
              { Name: 'nofile', Soft: s.openFiles, Hard: s.openFiles },
              { Name: 'fsize', Soft: s.fileSizeBytes, Hard: s.fileSizeBytes },
            ],
            // a name server that answers nothing (the step's gateway or relay), and the gateway's name without one
            ...(s.dns ? { DNSConfig: { Nameservers: s.dns } } : {}),
            ...(s.hosts ? { Hosts: Object.entries(s.hosts).map(([name, address]) => `${address} ${name}`) } : {}),
            Secrets: secrets,
            Configs: configs,
          },
          Resources: { Limits: { NanoCPUs: Math.round(s.cpus * 1e9), MemoryBytes: s.memoryBytes, Pids: s.pids }, Reservations: { NanoCPUs: Math.round(s.cpus * 1e9), MemoryBytes: s.memoryBytes } },
          RestartPolicy: { Condition: 'none', MaxAttempts: 0 },
          Placement: { Constraints: s.placement ?? [] },
          // bridge: the runner's overlay, which has a way out; else the step's own (internal, with its relay)
          Networks: [{ Target: s.network === 'bridge' ? SWARM_NETWORK : s.network }],
        },
        // One replica that is never restarted, not a replicated job: Docker 20.10 leaves a removed job's running task
        // running on its node (moby/moby#44312), so a canceled or timed-out step would go on there; a replicated
        // service's task is stopped when the service goes. And a removed job's finished tasks stay (desired state
        // complete), their reservations counted on their node by 20.10's constraint enforcer: later tasks there were
        // rejected and placed again; a replicated service's tasks go with it.
        Mode: { Replicated: { Replicas: 1 } },
      } as unknown as Docker.CreateServiceOptions;
      await this.createService();
    } catch (err) {
      await removeSwarmFiles(this.api, { label: Object.entries(labels).map(([k, v]) => `${k}=${v}`) }).catch(() => undefined);
      throw new ContainerError('docker_failed', `the swarm refused the step's job: ${errorMessage(err).split('\n')[0]}`, { cause: err });
    }
    this.started?.();
    void this.watch();
  }

  private async createService(): Promise<void> {
    // the registry's credentials go in the X-Registry-Auth header (none: no header), never in the job's spec
    const { id } = (await this.api.createService(this.pullAuth as Docker.AuthConfig, this.serviceSpec as unknown as Docker.ServiceSpec)) as unknown as { id: string };
    this.service = this.api.getService(id);
    this.serviceId = id;
  }

  /**
   * A task the swarm took back before it ran ("assigned node no longer meets
   * constraints": its node's reservations were over-committed, finished
   * tasks still counting) is placed again, as a new service, while the step may
   * still wait for a node. True when it was.
   */
  private async placeAgain(task: TaskInfo, t0: number): Promise<boolean> {
    const why = task.Status?.Err ?? '';
    // a task that had a container may have fetched the workspace (a one-time token): that step is not run twice
    if (!/no longer meets constraints/.test(why) || task.Status?.ContainerStatus?.ContainerID || Date.now() - t0 > PENDING_MS || this.removed) return false;
    await this.service?.remove().catch(() => undefined);
    // the name is free once the old job is gone
    for (let i = 0; i < 20; i++) {
      try {
        await this.createService();
        return true;
      } catch (err) {
        if (!nameTaken(err)) return false;
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    return false;
  }

  /** Polls the task and its node until the task ends, its node is lost, or no node takes it. */
  private async watch(): Promise<void> {
    const t0 = Date.now();
    let answeredAt = Date.now();
    while (!this.ended) {
      await new Promise<void>((r) => {
        const timer = setTimeout(r, POLL_MS);
        this.wake = () => (clearTimeout(timer), r());
      });
      this.wake = undefined;
      if (this.removed) return this.end({ exitCode: 137, oomKilled: false, ...(this.hostname ? { node: this.hostname } : {}) });
      let task: TaskInfo | undefined;
      try {
        const tasks = (await this.api.listTasks({ filters: { service: [this.serviceId ?? this.name] } })) as TaskInfo[];
        task = tasks.sort((a, b) => (a.CreatedAt ?? '').localeCompare(b.CreatedAt ?? '')).at(-1);
      } catch (err) {
        // a manager that stopped answering (it left the swarm, its machine went) ends the step, not the wait
        if (Date.now() - answeredAt > MANAGER_GONE_MS) {
          return this.end({ exitCode: 1, oomKilled: false, ...(this.hostname ? { node: this.hostname } : {}), problem: { status: 'failed', message: `the swarm manager has not answered for ${MANAGER_GONE_MS / 1000}s (${errorMessage(err).split('\n')[0]}): the step's fate is unknown` } });
        }
        continue;
      }
      answeredAt = Date.now();
      const state = task?.Status?.State ?? 'new';
      if (task?.NodeID && !this.hostname) {
        const node = await this.api.getNode(task.NodeID).inspect().catch(() => undefined);
        this.hostname = node?.Description?.Hostname;
      }
      if (state === 'rejected' && task && (await this.placeAgain(task, t0))) {
        this.hostname = undefined;
        continue;
      }
      if (TERMINAL.has(state)) {
        const code = task?.Status?.ContainerStatus?.ExitCode ?? (state === 'complete' ? 0 : null);
        const why = task?.Status?.Err ?? task?.Status?.Message ?? state;
        return this.end({
          exitCode: code ?? 1,
          oomKilled: false,
          ...(this.hostname ? { node: this.hostname } : {}),
          ...(state === 'rejected' ? { problem: { status: 'failed', message: `rejected on ${this.hostname ?? 'a node'}: ${why} (${this.missingImageHint()})` } } : {}),
        });
      }
      if (task?.NodeID && (state === 'running' || state === 'starting' || state === 'assigned' || state === 'accepted' || state === 'preparing')) {
        const node = await this.api.getNode(task.NodeID).inspect().catch(() => undefined);
        if (node && node.Status?.State !== 'ready') {
          return this.end({ exitCode: 137, oomKilled: false, ...(this.hostname ? { node: this.hostname } : {}), problem: { status: 'node_lost', message: `node ${this.hostname ?? task.NodeID} is ${node.Status?.State ?? 'gone'}: the step was lost with it` } });
        }
      }
      if ((state === 'new' || state === 'pending') && Date.now() - t0 > PENDING_MS) {
        return this.end({ exitCode: 1, oomKilled: false, problem: { status: 'failed', message: `no node took the step in ${PENDING_MS / 1000}s (${task?.Status?.Err ?? task?.Status?.Message ?? 'pending'}): check its placement and that a node has its memory and CPUs free` } });
      }
    }
  }

  private missingImageHint(): string {
    if (this.registry && this.spec.image.startsWith(`${this.registry}/`)) return nodePullHint(this.registry, this.imageName, this.spec.image);
    if (this.spec.image === this.imageName) return `does every node have image ${this.imageName}? scripts/swarm-lab.sh load, or a registry`;
    return `does every node have image ${this.imageName} as this engine has it, ${this.spec.image.slice(0, 19)}? It is never pulled: scripts/swarm-lab.sh load ${this.imageName}, or docker save ${this.imageName} | docker load on the node`;
  }

  private end(s: ExitState): void {
    if (this.ended) return;
    this.ended = s;
    this.finish(s);
  }

  async wait(signal?: AbortSignal): Promise<void> {
    await new Promise<void>((resolve) => {
      void this.done.then(() => resolve());
      signal?.addEventListener('abort', () => resolve(), { once: true });
    });
  }

  async waitNotRunning(): Promise<void> {
    await this.done;
  }

  async inspect(): Promise<ExitState> {
    return this.ended ?? { exitCode: 1, oomKilled: false };
  }

  async pidsLimitHits(): Promise<number | undefined> {
    return undefined;
  }

  /** A step's service cannot be asked to stop its task: the service goes, which stops it (SIGTERM, then SIGKILL). */
  async stop(): Promise<void> {
    await this.remove();
  }

  async kill(): Promise<void> {
    await this.remove();
  }

  async remove(): Promise<void> {
    if (this.removed) return;
    this.removed = true;
    this.end(this.ended ?? { exitCode: 137, oomKilled: false, ...(this.hostname ? { node: this.hostname } : {}) });
    await this.service?.remove().catch(() => undefined);
    const label = Object.entries(this.spec.labels).map(([k, v]) => `${k}=${v}`);
    await removeSwarmFiles(this.api, { label }).catch(() => undefined);
    // its workspace volumes, where the manager ran it (a worker's stay there, empty: docs/scale-out.md); the
    // task's container may still hold them a moment, when this is best effort
    const volumes = await this.api.listVolumes({ filters: { label: [...label, SCRATCH_LABEL] } }).catch(() => undefined);
    await Promise.all((volumes?.Volumes ?? []).map((v) => this.api.getVolume(v.Name).remove().catch(() => undefined)));
  }

  async connect(): Promise<void> {
    throw new ContainerError('swarm_unsupported', 'a swarm step joins its networks when created');
  }

  async addressOn(): Promise<string | undefined> {
    return undefined;
  }
}

/**
 * Watches a step's two log streams for END_MARKER (as the last bytes of a frame), strips it, and says when both
 * streams' last frames were it. Pure but for the callbacks.
 */
export class EndWatch {
  private readonly last: [boolean, boolean] = [false, false];
  private waiting: Array<() => void> = [];

  constructor(private readonly onMarker: () => void) {}

  /** Resolves once both streams' last bytes are the marker (at once if they are now). */
  both(): Promise<void> {
    if (this.last[0] && this.last[1]) return Promise.resolve();
    return new Promise((r) => this.waiting.push(r));
  }

  pass(stream: 0 | 1, b: Buffer, to: OutputHandler): void {
    const marker = `${END_MARKER}\n`;
    // the marker is ASCII: its bytes read the same in latin1
    const ended = b.length >= marker.length && b.subarray(b.length - marker.length).toString('latin1') === marker;
    const rest = ended ? b.subarray(0, b.length - marker.length) : b;
    if (rest.length) void to(rest);
    this.last[stream] = ended;
    if (ended) this.onMarker();
    if (this.last[0] && this.last[1]) for (const w of this.waiting.splice(0)) w();
  }
}
