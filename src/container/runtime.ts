/**
 * Our interface to a container engine, in our own types. No dockerode type
 * crosses this file: docker.ts implements it; tests may stand a fake in.
 */

export interface Mount {
  source: string;
  target: string;
  readOnly: boolean;
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
  /** capabilities added back after all are dropped */
  capAdd: string[];
  /** `none`, `bridge` or a named network */
  network: string;
  labels: Record<string, string>;
}

export type OutputHandler = (chunk: Buffer) => void | Promise<void>;

export interface ExitState {
  exitCode: number;
  oomKilled: boolean;
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
}

export interface PullProgress {
  status: string;
  /** 0..1 when the engine reports sizes */
  fraction?: number;
}

export interface ContainerRuntime {
  /** Throws a ContainerError that says how to reach the engine when it does not answer. */
  ping(): Promise<void>;
  /** Pulls the image when it is not present locally, reporting progress. */
  ensureImage(image: string, onProgress: (p: PullProgress) => void): Promise<void>;
  /** whether the engine has the image now (never pulls) */
  hasImage(image: string): Promise<boolean>;
  create(spec: ContainerSpec): Promise<ContainerHandle>;
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
}

export const LABELS = {
  runId: 'dev.runner.run-id',
  stepId: 'dev.runner.step-id',
  home: 'dev.runner.home',
  pipeline: 'dev.runner.pipeline',
} as const;
