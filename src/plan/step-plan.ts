/**
 * A validated pipeline → one plain StepPlan per step, with every setting
 * resolved (step, then its agent, then defaults, then built-in defaults).
 * Templates stay unrendered: outputs of earlier steps are known only at run
 * time (render.ts). Pure.
 */
import type { PipelineFile } from '../pipeline/schema.js';

export const BUILTIN_DEFAULTS = {
  memoryBytes: 2 * 1024 ** 3,
  cpus: 1.5,
  pids: 512,
  openFiles: 4096,
  // Host memory does not depend on it (git streams big files); it bounds commit time and repository growth per file.
  fileSizeBytes: 1024 ** 3,
  network: 'none',
  timeoutMs: 60 * 60_000,
  user: 'auto',
} as const;

export interface StepPlan {
  index: number;
  id: string;
  /** the agent profile's name, when the step uses one */
  agent?: string;
  image: string;
  /** either a script for `sh -e -c`, or an argv list */
  run?: string;
  command?: string[];
  prompt?: string;
  env: Record<string, string>;
  /** secret names this step receives */
  secrets: string[];
  outputs: string[];
  memoryBytes: number;
  cpus: number;
  pids: number;
  openFiles: number;
  fileSizeBytes: number;
  readOnlyRoot: boolean;
  capAdd: string[];
  network: string;
  timeoutMs: number;
  /** `auto` or `uid[:gid]` */
  user: string;
  continueOnError: boolean;
  /** runner apply / merge require this step to have completed */
  verify: boolean;
}

export function planSteps(p: PipelineFile): StepPlan[] {
  const d = p.defaults ?? {};
  return p.steps.map((s, index) => {
    const a = s.agent !== undefined ? (p.agents?.[s.agent] ?? {}) : {};
    const ownCommand = s.run !== undefined || s.command !== undefined;
    const run = ownCommand ? s.run : 'run' in a ? a.run : undefined;
    const command = ownCommand ? s.command : 'command' in a ? a.command : undefined;
    const plan: StepPlan = {
      index,
      id: s.id,
      image: s.image ?? a.image ?? d.image ?? '',
      env: { ...(p.env ?? {}), ...(a.env ?? {}), ...(s.env ?? {}) },
      secrets: [...new Set([...(a.secrets ?? []), ...(s.secrets ?? [])])],
      outputs: s.outputs ?? [],
      memoryBytes: s.resources?.memory ?? a.resources?.memory ?? d.resources?.memory ?? BUILTIN_DEFAULTS.memoryBytes,
      cpus: s.resources?.cpus ?? a.resources?.cpus ?? d.resources?.cpus ?? BUILTIN_DEFAULTS.cpus,
      pids: s.resources?.pids ?? a.resources?.pids ?? d.resources?.pids ?? BUILTIN_DEFAULTS.pids,
      openFiles: s.resources?.open_files ?? a.resources?.open_files ?? d.resources?.open_files ?? BUILTIN_DEFAULTS.openFiles,
      fileSizeBytes: s.resources?.file_size ?? a.resources?.file_size ?? d.resources?.file_size ?? BUILTIN_DEFAULTS.fileSizeBytes,
      readOnlyRoot: s.read_only ?? a.read_only ?? d.read_only ?? false,
      capAdd: s.cap_add ?? a.cap_add ?? d.cap_add ?? [],
      network: s.network ?? a.network ?? d.network ?? BUILTIN_DEFAULTS.network,
      timeoutMs: s.timeout ?? a.timeout ?? d.timeout ?? BUILTIN_DEFAULTS.timeoutMs,
      user: s.user ?? a.user ?? d.user ?? BUILTIN_DEFAULTS.user,
      continueOnError: s.continue_on_error ?? false,
      verify: s.verify ?? false,
    };
    if (s.agent !== undefined) plan.agent = s.agent;
    if (run !== undefined) plan.run = run;
    if (command !== undefined) plan.command = command;
    if (s.prompt !== undefined) plan.prompt = s.prompt;
    return plan;
  });
}

/** Every secret some step receives, for checking they exist before anything starts. */
export function secretsNeeded(plans: readonly StepPlan[]): string[] {
  return [...new Set(plans.flatMap((p) => p.secrets))].sort();
}

/** Who a step runs as when the project belongs to root: a step never runs as root unless the file says `user: "0:0"`. */
export const NONROOT_USER = { uid: 65532, gid: 65532 };

/** `auto` is the project's owner (or NONROOT_USER when that is root); else the explicit `uid[:gid]`. */
export function resolveUser(setting: string, owner: { uid: number; gid: number }): { uid: number; gid: number } {
  if (setting === 'auto') return owner.uid === 0 ? NONROOT_USER : owner;
  const [uid, gid] = setting.split(':').map(Number) as [number, number | undefined];
  return { uid, gid: gid ?? uid };
}
