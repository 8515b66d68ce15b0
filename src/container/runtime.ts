/**
 * Our interface to a container engine, in our own types. No dockerode type
 * crosses this file: docker.ts implements it; tests may stand a fake in.
 */
import type { HeldGateway } from '../gateway/host/step-gateway.js';
import type { Isolation } from '../pipeline/schema.js';

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
  /**
   * `source` is the lower layer of an overlay: the container reads it, and
   * what it writes goes to `upper` (with `work`, the overlay's work
   * directory, on the same filesystem), never to `source`.
   */
  overlay?: { upper: string; work: string };
}

export interface ContainerSpec {
  name: string;
  image: string;
  cmd: string[];
  env: Record<string, string>;
  workingDir: string;
  /** `uid:gid` */
  user: string;
  mounts: Mount[];
  memoryBytes: number;
  cpus: number;
  pids: number;
  /** RLIMIT_NOFILE */
  openFiles: number;
  /** RLIMIT_FSIZE: the largest file a process may write */
  fileSizeBytes: number;
  /** a read-only root filesystem, with a tmpfs at /tmp */
  readOnlyRoot: boolean;
  /** directories the step gets empty, of their own, writable by any uid, in any image (swarm: where its workspace is fetched to); the local engine mounts instead */
  scratch?: string[];
  /** capabilities added back after all are dropped */
  capAdd: string[];
  /** `none`, `bridge` or a named network */
  network: string;
  /** other names the container answers to on `network` (a user-defined network only) */
  networkAliases?: string[];
  /** name servers in place of the engine's (the gateway's, for a step behind it) */
  dns?: string[];
  /** names written into its /etc/hosts (the gateway's name: a step on another node asks no name server for it) */
  hosts?: Record<string, string>;
  /** namespaced kernel settings, e.g. net.ipv4.ip_unprivileged_port_start */
  sysctls?: Record<string, string>;
  /** files handed in by the engine, not the disk (swarm: secrets and configs); `secret`: only the step's user reads it */
  files?: Array<{ target: string; data: string | Buffer; secret: boolean }>;
  /**
   * Written to the container's standard input as it starts, which then ends:
   * for what must not be in its environment, command or labels, where anyone
   * who reads the engine's API sees it (the gateway's config, with its key). A promise: written once it
   * resolves (a warm gateway, its config handed over when a step claims it); rejected, the input ends empty.
   */
  stdin?: string | Promise<string>;
  /**
   * Environment variables for the command's process only, never in the
   * container's config (`docker inspect`): the command starts through the
   * secrets prelude (secret-env.ts), which reads them from standard input
   * (local) or a swarm secret file, and needs `/bin/sh` in the image. Not with `stdin`.
   */
  secretEnv?: Record<string, string>;
  /**
   * The command begins only once this resolves (the step's way out is up); rejected, it never begins. The
   * container may be made and started before: its command waits in the secrets prelude for its standard
   * input, which is written then (an image without /bin/sh: its start waits instead). Not with `stdin`.
   */
  holdUntil?: Promise<void>;
  /** swarm: where it may run (`node.labels.gpu == true`) */
  placement?: string[];
  labels: Record<string, string>;
  /** the sandbox it runs in (default runc); gvisor only after checkIsolation said the engine has it */
  isolation?: Isolation;
  /**
   * A warm container made ahead for this spec (src/run/warm-steps.ts): `create` hands it over, its command and
   * variables written to it then, rather than make one. Whoever sets it has checked that it was made to this
   * spec's shape, on this spec's directories.
   */
  warm?: HeldContainer;
}

/**
 * A container made and started ahead of any step, its command not begun (runtime.createHeld): it waits for a
 * step's command and variables, given at `claim`, or is discarded. Used once.
 */
export interface HeldContainer {
  readonly id: string;
  /** its container ended while it waited (or was discarded): it cannot be claimed */
  ended(): boolean;
  /** the handle of the step's container; its start hands over the spec's command and variables (env, secrets) */
  claim(spec: ContainerSpec): ContainerHandle;
  discard(): Promise<void>;
}

export interface NetworkSpec {
  name: string;
  /** no route out: containers on it reach only each other */
  internal: boolean;
  /**
   * No address for the host on it either: an internal network alone still lets
   * its containers reach the host's services through the bridge's address.
   */
  isolated: boolean;
  labels: Record<string, string>;
}

export type OutputHandler = (chunk: Buffer) => void | Promise<void>;

export interface ExitState {
  exitCode: number;
  oomKilled: boolean;
  /**
   * the engine never says a container was killed at its memory cap (Podman 4.3 on cgroup v1 leaves OOMKilled
   * false): a SIGKILL the runner did not send is taken as the cap, as under gVisor (docs/podman.md)
   */
  oomUnreported?: boolean;
  /** where it ran (swarm: the node's hostname) */
  node?: string;
  /** why it ended that the exit code cannot say (swarm: its node was lost, the task was rejected) */
  problem?: { status: 'node_lost' | 'failed'; message: string };
}

export interface ContainerHandle {
  readonly id: string;
  /**
   * Attaches to stdout and stderr (call before start); resolves once attached,
   * `ended` when the streams end. A handler that returns a promise pauses the
   * container's output until it settles (backpressure from a slow console).
   */
  attach(onStdout: OutputHandler, onStderr: OutputHandler): Promise<{ ended: Promise<void>; close: () => void }>;
  start(): Promise<void>;
  /** Resolves at the container's next exit: call it before start; `signal` gives up waiting. */
  wait(signal?: AbortSignal): Promise<void>;
  /** Resolves once the container is not running (at once if it has already exited): call it after start. */
  waitNotRunning(): Promise<void>;
  inspect(): Promise<ExitState>;
  /** How many times a fork failed at the pids limit, when the engine's cgroup can be read; undefined when it cannot. */
  pidsLimitHits(): Promise<number | undefined>;
  /** SIGTERM, then SIGKILL after `graceSeconds`. Already stopped is success. */
  stop(graceSeconds: number): Promise<void>;
  /** SIGKILL now. Not running is success. */
  kill(): Promise<void>;
  /** Force-removes. Already gone is success. */
  remove(): Promise<void>;
  /** Joins a further network, answering to `aliases` there (call before start: the container keeps its first network's route). */
  connect(network: string, aliases: string[]): Promise<void>;
  /** Its IPv4 address on `network`, once the engine gave it one (early in its start); undefined until then, or when it has none. */
  addressOn(network: string): Promise<string | undefined>;
}

export interface PullProgress {
  status: string;
  /** 0..1 when the engine reports sizes */
  fraction?: number;
}

/** An image built by the engine from a context the runner made (a dev container's Dockerfile, its features). */
export interface ImageBuild {
  /** a tar stream of the build's context */
  context: NodeJS.ReadableStream;
  /** the Dockerfile's path inside the context */
  dockerfile: string;
  tag: string;
  args: Record<string, string>;
  target?: string;
  labels: Record<string, string>;
}

/** What an image sets for the containers made from it. */
export interface ImageConfig {
  /** the image's ID: another build under the same name is another ID */
  id?: string;
  user: string;
  workingDir: string;
  env: Record<string, string>;
  cmd: string[] | undefined;
  entrypoint: string[] | undefined;
}

export interface ContainerRuntime {
  /** Throws a ContainerError that says how to reach the engine when it does not answer. */
  ping(): Promise<void>;
  /**
   * Pulls the image when it is not present locally, reporting progress (its first report says a pull begins);
   * one of the runner's own images (own-images.ts) is never pulled: missing, it is refused with how to build it.
   */
  ensureImage(image: string, onProgress: (p: PullProgress) => void): Promise<void>;
  /** whether the engine has the image now (never pulls) */
  hasImage(image: string): Promise<boolean>;
  /** the image's labels, or undefined when the engine does not have it */
  imageLabels(image: string): Promise<Record<string, string> | undefined>;
  create(spec: ContainerSpec): Promise<ContainerHandle>;
  /**
   * Makes and starts a container of `spec` whose command waits for a step (its `cmd`, `env` and `secretEnv` are
   * not used: each claim gives its own). Engines that cannot keep one: absent.
   */
  createHeld?(spec: ContainerSpec): Promise<HeldContainer>;
  /**
   * Builds an image on the engine (a dev container's, src/container/devcontainer/), each line of its progress to
   * `onLine`; a failed build throws a ContainerError with the build's last words. Engines that cannot: absent.
   */
  buildImage?(build: ImageBuild, onLine: (line: string) => void): Promise<void>;
  /** Makes a container's filesystem the image `tag`, its config reset by `changes` (Dockerfile instructions: CMD, USER...). */
  commitContainer?(id: string, tag: string, changes: string[]): Promise<void>;
  /** Removes the name `tag` (the image stays while another name or image uses it). Already gone is success. */
  untagImage?(tag: string): Promise<void>;
  /** what the image sets for its containers, or undefined when the engine does not have it */
  imageConfig?(image: string): Promise<ImageConfig | undefined>;
  /**
   * Throws a ContainerError (`no_gvisor`, `gvisor_broken`) that says how to
   * add or fix the engine's gVisor runtime when `steps` ask for gvisor and the
   * engine cannot start a container under it; `image` is one of theirs, for
   * the probe. Never falls back to runc. Returns what a step under it should
   * know (what the engine's gVisor cannot do), for the run's log.
   */
  checkIsolation(steps: ReadonlyArray<{ id: string; isolation: Isolation; image: string }>): Promise<string[]>;
  /**
   * Throws a ContainerError with what to change when the engine would not find
   * these paths where the runner sees them (a runner in a container whose
   * mounts differ from the host's paths). Does nothing on a host.
   */
  checkHostPaths(paths: string[]): Promise<void>;
  /** The containers (running or not) whose labels include all of `labels`. */
  listByLabels(labels: Record<string, string>): Promise<Array<{ id: string; labels: Record<string, string> }>>;
  /** Force-removes every container whose labels include all of `labels`; returns how many. */
  removeByLabels(labels: Record<string, string>): Promise<number>;
  /** Returns the network's IPv4 subnet (CIDR). */
  createNetwork(spec: NetworkSpec): Promise<{ subnet: string }>;
  /** Already gone is success. */
  removeNetwork(name: string): Promise<void>;
  /** The gateway address of each of the engine's networks (of `network` alone, when named): addresses of the engine's machine. */
  networkGateways(network?: string): Promise<string[]>;
  /** Removes every network whose labels include all of `labels` (their containers first); returns how many. */
  removeNetworksByLabels(labels: Record<string, string>): Promise<number>;
}

export const LABELS = {
  runId: 'dev.runner.run-id',
  stepId: 'dev.runner.step-id',
  home: 'dev.runner.home',
  pipeline: 'dev.runner.pipeline',
  /** `gateway` on a step's gateway container and its network; absent on a step's own container */
  role: 'dev.runner.role',
} as const;

/**
 * How a step's workspace reaches its container and its work comes back, as an engine adapter does it: mounted (the
 * local engine: the container sees the runner's disk), or by tar (swarm: a node cannot see it). The step prepares its
 * container through it and finishes after, and does not know which it got.
 */
export interface StepTransport {
  /**
   * Before a run, before any image is pulled: throws a ContainerError saying what this engine cannot do for these
   * steps (swarm: gVisor), or what it lacks to run any step (swarm: the gateway image's transfer helper).
   */
  checkRun(steps: ReadonlyArray<{ id: string; isolation: Isolation }>): Promise<void>;
  /** why a step here cannot mount the runner's disk (its caches), as its log says it ("on --engine swarm (...)"); undefined: it can */
  readonly noHostMounts?: string | undefined;
  /** where a step's gateway runs */
  readonly gateways: GatewayPlace;
  prepare(spec: ContainerSpec, where: Where): Promise<Prepared>;
}

export interface Prepared {
  spec: ContainerSpec;
  /** after the container ended: the step's work is in the workspace again, or why not */
  finish(): Promise<string | undefined>;
}

export interface Where {
  workspace: string;
  io: string;
  owner: { uid: number; gid: number };
  /** the step's gateway, which also relays to the runner's transfer server (a step on another node) */
  relay?: { host: string; port: number } | undefined;
  /**
   * a git workspace's: makes a new directory a copy of its branch's history down to the run's base, which a step on
   * another node gets as its workspace's `.git` (src/workspace/git-copy.ts); a mounted step sees the repository itself
   */
  gitCopy?: ((into: string) => Promise<void>) | undefined;
  /** a line for the step's log, at any time while it runs */
  note?: ((text: string) => void) | undefined;
  /** gateways made ahead (--warm): a step that needs a relay of its own (a swarm step with network: none) takes one as it */
  warm?: { takeForRelay(): Promise<HeldGateway | undefined> } | undefined;
}

/**
 * Where a step's gateway runs and what else it does: beside the step on its own engine (local), or on a swarm's
 * manager (the key stays on this side), on the step's own overlay, relaying the step's workspace to and from the
 * runner as well.
 */
export interface GatewayPlace {
  runtime: ContainerRuntime;
  /** the runner's transfer server, as the gateway reaches it, when its step's workspace goes through it; undefined: it does not */
  relayTo(): Promise<{ host: string; port: number } | undefined>;
  /** the name of a gateway's try (its network adds -net) */
  nameFor(base: string, attempt: number): string;
  /** a try that failed this way is tried again (a busy manager attaching to a new overlay); at most 3 tries */
  retryable(err: unknown): boolean;
}
