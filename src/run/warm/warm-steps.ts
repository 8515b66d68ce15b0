/**
 * Warm step containers: beside each warm gateway (gateway-pool.ts), a step's
 * container made and started ahead, on that gateway's network, its command
 * not begun: it waits in the warm prelude (secret-env.ts) for a step's
 * variables and command. A step that takes the gateway claims the container
 * when its spec has the shape the container was made to (warmShape: image,
 * user, limits, mounts, network), and its own directories (the run's
 * worktree, its io, its caches' throw-away layers) take the place of the
 * empty ones the container mounted (take-place.ts): nothing is copied, and
 * the container begins the step's command at once. Otherwise the step's
 * container is made as always and the warm one is removed.
 *
 * The shape is learned, not guessed: the steps behind a gateway that ran
 * lately are those the next warm containers are made to (the latest few
 * shapes; each container of the one the fewest waiting have), and a step
 * takes the gateway whose container was made for its image, project, user
 * and limits (warmKey). A
 * warm container is used once and removed with its step; it ran nothing
 * before its claim, held nothing of another run, and its config names
 * nothing of a step (no variable, command or run label: `docker inspect`
 * shows none).
 */
import { lstatSync } from 'node:fs';
import { chmod, chown, mkdir, readdir, rm, rmdir } from 'node:fs/promises';
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

/**
 * A directory of the step's own, by where it is mounted: the workspace, the io directory, or a layer of a cache read
 * through an overlay (its `upper` and `work`: made for the step, empty when it starts). Pure.
 */
export interface OwnDir {
  target: string;
  part: 'dir' | 'upper' | 'work';
}

/** The step's own directories in a spec, each with its path there. Pure. */
export function ownDirs(spec: ContainerSpec): Array<OwnDir & { path: string }> {
  return spec.mounts.flatMap((m): Array<OwnDir & { path: string }> =>
    m.overlay
      ? [
          { target: m.target, part: 'upper', path: m.overlay.upper },
          { target: m.target, part: 'work', path: m.overlay.work },
        ]
      : OWN_TARGETS.includes(m.target)
        ? [{ target: m.target, part: 'dir', path: m.source }]
        : [],
  );
}

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
  /** the shape learned it was made of (on another gateway's network than the step it was learned from) */
  readonly learned: string;
  /** what a step is told apart by before its spec is known (warmKey: its image, project, user and limits) */
  readonly key: string;
  /** the image's id when it was made: a step after a rebuild starts cold */
  readonly imageId: string | undefined;
  /** its own directories, empty when made (an overlay's work holds the kernel's own), each to take the step's place */
  readonly slots: ReadonlyArray<OwnDir & { path: string }>;
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
  // the step's own directories are not the shape: a cache's layer (its lower, the cache, is)
  const mounts = spec.mounts.map((m): Mount => (m.overlay ? { ...m, overlay: { upper: '', work: '' } } : OWN_TARGETS.includes(m.target) ? { ...m, source: '' } : m));
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

/** What the pool knows of a step when it takes a gateway, before its container's spec is made. */
export interface WarmKeyParts {
  image: string;
  project: string | undefined;
  /** `uid:gid` */
  user: string;
  memoryBytes: number;
  cpus: number;
  pids: number;
}

/** A step's image, project, user and limits: most of what tells its shape from another's. Pure. */
export function warmKey(k: WarmKeyParts): string {
  return JSON.stringify([k.image, k.project ?? '', k.user, k.memoryBytes, k.cpus, k.pids]);
}

function keyOf(spec: ContainerSpec): string {
  return warmKey({ ...spec, project: spec.mounts.find((m) => m.target === CONTAINER_PATHS.project)?.source });
}

/** what each field of warmShape's array is, for a person */
const SHAPE_FIELDS = ['image', 'working directory', 'user', 'mounts', 'memory', 'CPUs', 'process limit', 'open files limit', 'file size limit', 'read-only root', 'capabilities', 'network', 'network aliases', 'name servers', 'hosts', 'kernel settings', 'isolation'];

/** Which part of two shapes differs first, for the step's log: "image", "mounts (/home/agent/.npm)"... Pure. */
export function shapeDifference(a: string, b: string): string {
  const x = JSON.parse(a) as unknown[];
  const y = JSON.parse(b) as unknown[];
  const i = x.findIndex((v, n) => JSON.stringify(v) !== JSON.stringify(y[n]));
  if (i < 0) return 'shape';
  if (SHAPE_FIELDS[i] === 'mounts') {
    const ms = (v: unknown) => (v as Mount[]).map((m) => JSON.stringify(m));
    const [mx, my] = [ms(x[i]), ms(y[i])];
    const odd = [...mx.filter((m) => !my.includes(m)), ...my.filter((m) => !mx.includes(m))].map((m) => (JSON.parse(m) as Mount).target);
    return `mounts (${[...new Set(odd)].join(', ')})`;
  }
  return SHAPE_FIELDS[i] ?? 'shape';
}

export interface WarmStepsOptions {
  /** where warm containers' directories are made: on the filesystem of the runs' worktrees (the home) */
  dir: string;
  /** how many shapes are kept, the latest first (warm-pool.ts KEEP_SHAPES) */
  keep?: number;
  labels: Record<string, string>;
  onProblem?(message: string): void;
}

interface Learned {
  shape: string;
  template: ContainerSpec;
  /** the owner and mode of the template's own directories, as they were: a warm container's are made so before it starts (an overlay takes its upper's when mounted, and keeps them) */
  modes: Array<{ uid: number; gid: number; mode: number } | undefined>;
}

export class WarmSteps {
  /** the shapes learned, the latest first */
  private learned: Learned[] = [];
  private seq = 0;
  private readonly prefix = `${os.hostname()}-${process.pid}-`;
  private failedShape: string | undefined;

  constructor(
    private readonly runtime: ContainerRuntime & Required<Pick<ContainerRuntime, 'createHeld'>>,
    private readonly o: WarmStepsOptions,
  ) {}

  /**
   * A shape warm containers are made to: this step's, when a warm container could serve one like it; the latest
   * first, `keep` of them. Returns whether the shapes kept changed (one new, and the oldest dropped past `keep`).
   */
  learn(spec: ContainerSpec): boolean {
    const shape = warmShape(spec);
    if (!shape) return false;
    const { secretEnv: _s, holdUntil: _h, warm: _w, ...rest } = spec;
    const known = this.learned.findIndex((l) => l.shape === shape);
    const modes = ownDirs(spec).map((d) => {
      try {
        const st = lstatSync(d.path);
        return { uid: st.uid, gid: st.gid, mode: st.mode & 0o7777 };
      } catch {
        return undefined;
      }
    });
    if (known >= 0) this.learned.splice(known, 1);
    this.learned.unshift({ shape, template: { ...rest, cmd: [], env: {} }, modes });
    this.learned.length = Math.min(this.learned.length, Math.max(1, this.o.keep ?? 1));
    return known < 0;
  }

  get knows(): boolean {
    return this.learned.length > 0;
  }

  /** the shapes kept, the latest first */
  get shapes(): string[] {
    return this.learned.map((l) => l.shape);
  }

  /** A warm container of `shape` (else the latest) on `way`; undefined when no shape is known yet, or it could not be made (said once). */
  async make(way: WarmWay, name: string, shape?: string): Promise<WarmStep | undefined> {
    const l = this.learned.find((x) => x.shape === shape) ?? this.learned[0];
    if (!l) return undefined;
    const { template: t, modes } = l;
    const root = path.join(this.o.dir, `${this.prefix}${(this.seq++).toString(36)}`);
    const slots = ownDirs(t).map((d, i) => ({ target: d.target, part: d.part, path: path.join(root, `${i}-${d.part}`) }));
    const slotOf = (target: string, part: OwnDir['part']) => slots.find((d) => d.target === target && d.part === part)!.path;
    const spec: ContainerSpec = {
      ...t,
      name,
      labels: { ...this.o.labels, 'dev.runner.role': 'step' },
      mounts: t.mounts.map((m) =>
        m.overlay ? { ...m, overlay: { upper: slotOf(m.target, 'upper'), work: slotOf(m.target, 'work') } } : OWN_TARGETS.includes(m.target) ? { ...m, source: slotOf(m.target, 'dir') } : m,
      ),
      network: way.network,
      ...(way.dns ? { dns: way.dns } : {}),
      ...(way.hosts ? { hosts: way.hosts } : {}),
    };
    const made = warmShape(spec)!;
    try {
      await mkdir(root, { recursive: true, mode: 0o700 });
      for (const [i, d] of slots.entries()) {
        await mkdir(d.path, { mode: 0o700 });
        const m = modes[i];
        if (m) {
          await chown(d.path, m.uid, m.gid);
          await chmod(d.path, m.mode);
        }
      }
      const [held, image] = await Promise.all([this.runtime.createHeld(spec), this.runtime.imageConfig?.(t.image)]);
      this.failedShape = undefined;
      return {
        held,
        shape: made,
        learned: l.shape,
        key: keyOf(t),
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
      if (this.failedShape !== l.shape) this.o.onProblem?.(`a warm step container of ${t.image} could not be made (its steps start theirs cold): ${errorMessage(err)}`);
      this.failedShape = l.shape;
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
 * workspace can give its directory: the worktree, the io directory and a cache's layer take the place of the warm
 * container's, and the spec says to claim it. Otherwise the warm container goes and the spec is as it was. `why`: said when it is not used.
 */
export async function claimWarm(
  warm: WarmStep,
  spec: ContainerSpec,
  step: {
    ws: { takePlace?: ((slot: string) => Promise<void>) | undefined };
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
  // the step's own directories, each paired with the warm container's in its place
  const pairs = ownDirs(spec).map((d) => ({ ...d, slot: warm.slots.find((x) => x.target === d.target && x.part === d.part)?.path }));
  if (pairs.some((p) => !p.slot) || pairs.length !== warm.slots.length) {
    await warm.discard().catch(() => undefined);
    return { spec, why: 'its directories are not the step\'s (a bug in the runner)' };
  }
  try {
    const ws = pairs.find((p) => p.target === CONTAINER_PATHS.workspace)!;
    await step.ws.takePlace!(ws.slot!);
    await step.moved?.();
  } catch (err) {
    await warm.discard().catch(() => undefined);
    return { spec, why: `its workspace could not be moved into it (${errorMessage(err)})` };
  }
  // the worktree is in the warm container's directory now: a failure from here leaves the others where they were
  try {
    // an overlay's work directory holds what the kernel made there when the warm container started
    for (const p of pairs) if (p.target !== CONTAINER_PATHS.workspace) await takePlace(p.path, p.slot!, { slotHolds: p.part === 'work' });
  } catch (err) {
    await warm.discard().catch(() => undefined);
    return { spec, why: `a directory of the step's could not be moved into it (${errorMessage(err)})` };
  }
  await warm.claimed();
  return { spec: { ...spec, warm: warm.held } };
}

async function unusable(warm: WarmStep, spec: ContainerSpec, step: { ws: { takePlace?: unknown }; runtime: Pick<ContainerRuntime, 'imageConfig'> }): Promise<string | undefined> {
  if (warm.held.ended()) return 'it ended while it waited';
  if (!step.ws.takePlace) return 'the workspace is not a worktree of the run alone';
  const shape = warmShape(spec);
  if (!shape) return 'no container made ahead serves a step like it (its gateway inspects TLS, or it is given input)';
  if (shape !== warm.shape) return `it was made for a step of another ${shapeDifference(warm.shape, shape)}`;
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
