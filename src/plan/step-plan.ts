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
  network: string;
  timeoutMs: number;
  /** `auto` or `uid[:gid]` */
  user: string;
  continueOnError: boolean;
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
      network: s.network ?? a.network ?? d.network ?? BUILTIN_DEFAULTS.network,
      timeoutMs: s.timeout ?? a.timeout ?? d.timeout ?? BUILTIN_DEFAULTS.timeoutMs,
      user: s.user ?? a.user ?? d.user ?? BUILTIN_DEFAULTS.user,
      continueOnError: s.continue_on_error ?? false,
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

/** `1000:1000` from `auto` and the project's owner, or the explicit setting. */
export function resolveUser(setting: string, owner: { uid: number; gid: number }): string {
  if (setting === 'auto') return `${owner.uid}:${owner.gid}`;
  return setting.includes(':') ? setting : `${setting}:${setting}`;
}
