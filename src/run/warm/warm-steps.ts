/**
 * Warm step containers: beside each warm gateway (gateway-pool.ts), a step's
 * container made and started ahead, on that gateway's network, its command
 * not begun: it waits in the warm prelude (secret-env.ts) for a step's
 * variables and command. A step that takes the gateway claims the container
 * when its spec has the shape the container was made to (warmShape: image,
 * user, limits, mounts, network), and its directories (the run's worktree and
 * its io) take the place of the two empty ones the container mounted
 * (take-place.ts): nothing is copied, and the container begins the step's
 * command at once. Otherwise the step's container is made as always and the
 * warm one is removed.
 *
 * The shape is learned, not guessed: the last step that took a warm gateway
 * is the one the next warm containers are made to (one shape per pool). A
 * warm container is used once and removed with its step; it ran nothing
 * before its claim, held nothing of another run, and its config names
 * nothing of a step (no variable, command or run label: `docker inspect`
 * shows none).
 */
import { mkdir, readdir, rm, rmdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pidAlive } from '../../common/pid-alive.js';
import { errorMessage } from '../../common/errors.js';
import type { ContainerRuntime, ContainerSpec, HeldContainer, Mount } from '../../container/runtime.js';
import { CONTAINER_PATHS } from '../../plan/render.js';
import { GATEWAY_CA_FILE_PREFIX } from '../../plan/gateway-trust.js';
import { encodeWarmStart } from '../../container/secret-env.js';
import { takePlace } from '../../workspace/take-place.js';

/** the mounts whose directories are the step's own (made for its run or its step): a warm container mounts empty ones of its own there */
const OWN_TARGETS: readonly string[] = [CONTAINER_PATHS.workspace, CONTAINER_PATHS.io];

/** The way a warm container is made on: its gateway's network, name server and hosts. */
export interface WarmWay {
  network: string;
  dns?: string[] | undefined;
  hosts?: Record<string, string> | undefined;
}

/** A warm step container and the two directories it mounted for the step's. */
export interface WarmStep {
  readonly held: HeldContainer;
  /** warmShape of the spec it was made to */
  readonly shape: string;
  /** the image's id when it was made: a step after a rebuild starts cold */
  readonly imageId: string | undefined;
  readonly slots: { workspace: string; io: string };
  discard(): Promise<void>;
  /** after the claim: its own directory, now empty, goes */
  claimed(): Promise<void>;
}

/**
 * What of a spec a warm container is made to, as one string; undefined for a spec no warm container serves (one on
 * another node, given input, or without its own workspace and io). Everything the engine fixes when it
 * makes a container is in it; what the claim hands over (command, variables, secrets) and what names the run
 * (container name, labels) is not, nor are the sources of the step's own two directories. Pure.
 */
export function warmShape(spec: ContainerSpec): string | undefined {
  // `files` are a swarm's (configs, secrets): the local engine, the only one warm containers are made on, mounts instead
  if (spec.stdin !== undefined || spec.scratch?.length || spec.placement?.length) return undefined;
  const own = spec.mounts.filter((m) => OWN_TARGETS.includes(m.target));
  if (own.length !== OWN_TARGETS.length || own.some((m) => m.overlay || m.readOnly)) return undefined;
  // a step's own trust bundle (its gateway inspects TLS) is a file of that step alone: no container made ahead mounts it, and
  // a shape learned from it would have the pool remake its waiting containers to one no step can claim
  if (spec.mounts.some((m) => path.basename(m.source).startsWith(GATEWAY_CA_FILE_PREFIX))) return undefined;
  const mounts = spec.mounts.map((m): Mount => (OWN_TARGETS.includes(m.target) ? { ...m, source: '' } : m));
  return JSON.stringify([
    spec.image,
    spec.workingDir,
    spec.user,
    mounts,
    spec.memoryBytes,
    spec.cpus,
    spec.pids,
    spec.openFiles,
    spec.fileSizeBytes,
    spec.readOnlyRoot,
    spec.capAdd,
    spec.network,
    spec.networkAliases ?? [],
    spec.dns ?? [],
    spec.hosts ?? {},
    spec.sysctls ?? {},
    spec.isolation ?? 'runc',
  ]);
}

export interface WarmStepsOptions {
  /** where warm containers' directories are made: on the filesystem of the runs' worktrees (the home) */
  dir: string;
  labels: Record<string, string>;
  onProblem?(message: string): void;
}

export class WarmSteps {
  private template: ContainerSpec | undefined;
  private seq = 0;
  private readonly prefix = `${os.hostname()}-${process.pid}-`;
  private failedShape: string | undefined;

  constructor(
    private readonly runtime: ContainerRuntime & Required<Pick<ContainerRuntime, 'createHeld'>>,
    private readonly o: WarmStepsOptions,
  ) {}

  /** The shape the next warm containers are made to: this step's, when a warm container could serve one like it. */
  learn(spec: ContainerSpec): boolean {
    const shape = warmShape(spec);
    if (!shape) return false;
    const { secretEnv: _s, holdUntil: _h, warm: _w, ...rest } = spec;
    const changed = !this.template || warmShape(this.template) !== shape;
    this.template = { ...rest, cmd: [], env: {} };
    return changed;
  }

  get knows(): boolean {
    return this.template !== undefined;
  }

  /** A warm container of the learned shape on `way`; undefined when no shape is known yet, or it could not be made (said once). */
  async make(way: WarmWay, name: string): Promise<WarmStep | undefined> {
    const t = this.template;
    if (!t) return undefined;
    const root = path.join(this.o.dir, `${this.prefix}${(this.seq++).toString(36)}`);
    const slots = { workspace: path.join(root, 'workspace'), io: path.join(root, 'io') };
    const spec: ContainerSpec = {
      ...t,
      name,
      labels: { ...this.o.labels, 'dev.runner.role': 'step' },
      mounts: t.mounts.map((m) => (m.target === CONTAINER_PATHS.workspace ? { ...m, source: slots.workspace } : m.target === CONTAINER_PATHS.io ? { ...m, source: slots.io } : m)),
      network: way.network,
      ...(way.dns ? { dns: way.dns } : {}),
      ...(way.hosts ? { hosts: way.hosts } : {}),
    };
    const shape = warmShape(spec)!;
    try {
      await mkdir(root, { recursive: true, mode: 0o700 });
      await mkdir(slots.workspace, { mode: 0o700 });
      await mkdir(slots.io, { mode: 0o700 });
      const [held, image] = await Promise.all([this.runtime.createHeld(spec), this.runtime.imageConfig?.(t.image)]);
      this.failedShape = undefined;
      return {
        held,
        shape,
        imageId: image?.id,
        slots,
        discard: async () => {
          await held.discard();
          await rm(root, { recursive: true, force: true });
        },
        claimed: async () => {
          await rmdir(root).catch(() => undefined);
        },
      };
    } catch (err) {
      await rm(root, { recursive: true, force: true }).catch(() => undefined);
      if (this.failedShape !== shape) this.o.onProblem?.(`a warm step container of ${t.image} could not be made (its steps start theirs cold): ${errorMessage(err)}`);
      this.failedShape = shape;
      return undefined;
    }
  }

  /** The directories of warm containers whose runner on this host is gone (their containers go with its warm gateways). */
  async removeStale(): Promise<void> {
    await removeDeadWarmStepDirs(this.o.dir);
  }
}

/**
 * The directories of warm step containers (under `dir`) whose runner on this host is gone: by the next pool of the
 * home, and by every runner's start (reconcile.ts) once the dead runner's containers went, with or without --warm.
 */
export async function removeDeadWarmStepDirs(dir: string): Promise<void> {
  const host = `${os.hostname()}-`;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith(host) || name.startsWith(`${host}${process.pid}-`)) continue;
    const pid = Number(name.slice(host.length).split('-')[0]);
    if (Number.isInteger(pid) && pid > 0 && !pidAlive(pid)) await rm(path.join(dir, name), { recursive: true, force: true }).catch(() => undefined);
  }
}

/**
 * The step's container from `warm` when it was made to this spec's shape, of the image the engine has now, and the
 * workspace can give its directory: the worktree and the io directory take the place of the warm container's, and
 * the spec says to claim it. Otherwise the warm container goes and the spec is as it was. `why`: said when it is not used.
 */
export async function claimWarm(
  warm: WarmStep,
  spec: ContainerSpec,
  step: {
    ws: { takePlace?: ((slot: string) => Promise<void>) | undefined };
    ioDir: string;
    runtime: Pick<ContainerRuntime, 'imageConfig'>;
    /** the workspace is a new directory now: the run's record is written (its recovery checks the directory) */
    moved?: (() => Promise<void>) | undefined;
  },
): Promise<{ spec: ContainerSpec; why?: string }> {
  const why = await unusable(warm, spec, step);
  if (why) {
    await warm.discard().catch(() => undefined);
    return { spec, why };
  }
  try {
    await step.ws.takePlace!(warm.slots.workspace);
    await step.moved?.();
  } catch (err) {
    await warm.discard().catch(() => undefined);
    return { spec, why: `its workspace could not be moved into it (${errorMessage(err)})` };
  }
  // the worktree is in the warm container's directory now: a failure from here leaves the io directory, where it was
  try {
    await takePlace(step.ioDir, warm.slots.io);
  } catch (err) {
    await warm.discard().catch(() => undefined);
    return { spec, why: `its io directory could not be moved into it (${errorMessage(err)})` };
  }
  await warm.claimed();
  return { spec: { ...spec, warm: warm.held } };
}

async function unusable(warm: WarmStep, spec: ContainerSpec, step: { ws: { takePlace?: unknown }; runtime: Pick<ContainerRuntime, 'imageConfig'> }): Promise<string | undefined> {
  if (warm.held.ended()) return 'it ended while it waited';
  if (!step.ws.takePlace) return 'the workspace is not a worktree of the run alone';
  const shape = warmShape(spec);
  if (!shape) return 'no container made ahead serves a step like it (its gateway inspects TLS, or it is given input)';
  if (shape !== warm.shape) return 'it was made for a step of another shape (image, user, limits or mounts)';
  // what the claim writes to the warm prelude: a variable it cannot carry (one named as the prelude's own) starts the step cold, as it would without --warm
  try {
    encodeWarmStart({ ...spec.env, ...(spec.secretEnv ?? {}) }, ['-']);
  } catch (err) {
    return `its variables cannot pass through a warm container's start (${errorMessage(err)})`;
  }
  const now = await step.runtime.imageConfig?.(spec.image).catch(() => undefined);
  if (!now || now.id !== warm.imageId) return `the image ${spec.image} changed since it was made`;
  return undefined;
}
