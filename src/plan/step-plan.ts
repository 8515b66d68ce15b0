/**
 * A validated pipeline → one plain StepPlan per step, with every setting
 * resolved (step, then its agent, then defaults, then built-in defaults).
 * Templates stay unrendered: outputs of earlier steps are known only at run
 * time (render.ts). Pure.
 */
import type { AgentPreset, AgentSettings } from '../agents/preset.js';
import { AGENT_RESULT_FILE } from '../agents/preset.js';
import { PRESETS } from '../agents/presets.js';
import type { AgentFile, PipelineFile } from '../pipeline/schema.js';
import { CONTAINER_PATHS } from './render.js';

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
  /** the agent preset whose command the step runs (its result is read after the step), with its settings */
  preset?: string;
  agentSettings?: AgentSettings;
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
    const a: AgentFile = s.agent !== undefined ? (p.agents?.[s.agent] ?? {}) : {};
    const preset = a.use !== undefined ? PRESETS[a.use] : undefined;
    const settings = { model: a.model, maxTurns: a.max_turns, baseUrl: a.base_url };
    const ownCommand = s.run !== undefined || s.command !== undefined;
    const agentCommand = a.run !== undefined || a.command !== undefined;
    // The preset's headless command, unless the step or the agent says what to run.
    const usesPreset = preset !== undefined && !ownCommand && !agentCommand;
    const run = ownCommand ? s.run : agentCommand ? a.run : usesPreset ? preset.script(settings, `${CONTAINER_PATHS.io}/${AGENT_RESULT_FILE}`) : undefined;
    const command = ownCommand ? s.command : agentCommand ? a.command : undefined;
    const plan: StepPlan = {
      index,
      id: s.id,
      image: s.image ?? a.image ?? preset?.image ?? d.image ?? '',
      env: { ...(p.env ?? {}), ...(preset?.env(settings) ?? {}), ...(a.env ?? {}), ...(s.env ?? {}) },
      secrets: [...new Set([...(a.secrets ?? presetCredentials(preset, p)), ...(s.secrets ?? [])])],
      outputs: s.outputs ?? [],
      memoryBytes: s.resources?.memory ?? a.resources?.memory ?? d.resources?.memory ?? BUILTIN_DEFAULTS.memoryBytes,
      cpus: s.resources?.cpus ?? a.resources?.cpus ?? d.resources?.cpus ?? BUILTIN_DEFAULTS.cpus,
      pids: s.resources?.pids ?? a.resources?.pids ?? d.resources?.pids ?? BUILTIN_DEFAULTS.pids,
      openFiles: s.resources?.open_files ?? a.resources?.open_files ?? d.resources?.open_files ?? BUILTIN_DEFAULTS.openFiles,
      fileSizeBytes: s.resources?.file_size ?? a.resources?.file_size ?? d.resources?.file_size ?? BUILTIN_DEFAULTS.fileSizeBytes,
      readOnlyRoot: s.read_only ?? a.read_only ?? d.read_only ?? false,
      capAdd: s.cap_add ?? a.cap_add ?? d.cap_add ?? [],
      network: s.network ?? a.network ?? preset?.network ?? d.network ?? BUILTIN_DEFAULTS.network,
      timeoutMs: s.timeout ?? a.timeout ?? d.timeout ?? BUILTIN_DEFAULTS.timeoutMs,
      user: s.user ?? a.user ?? d.user ?? BUILTIN_DEFAULTS.user,
      continueOnError: s.continue_on_error ?? false,
      verify: s.verify ?? false,
    };
    if (s.agent !== undefined) plan.agent = s.agent;
    if (usesPreset) {
      plan.preset = preset.name;
      plan.agentSettings = settings;
    }
    if (run !== undefined) plan.run = run;
    if (command !== undefined) plan.command = command;
    if (s.prompt !== undefined) plan.prompt = s.prompt;
    return plan;
  });
}

/** The credentials a preset accepts that the pipeline declares: what its agent gets when it names no secrets of its own. */
export function presetCredentials(preset: AgentPreset | undefined, p: Pick<PipelineFile, 'secrets'>): string[] {
  return preset ? preset.credentials.filter((c) => (p.secrets ?? []).includes(c)) : [];
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
