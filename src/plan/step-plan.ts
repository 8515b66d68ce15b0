/**
 * A validated pipeline → one plain StepPlan per step, with every setting
 * resolved (step, then its agent, then defaults, then built-in defaults).
 * Templates stay unrendered: outputs of earlier steps are known only at run
 * time (render.ts). Pure.
 */
import type { AgentPreset, AgentSettings, ModelApi } from '../agents/preset.js';
import { AGENT_RESULT_FILE } from '../agents/preset.js';
import { PRESETS } from '../agents/presets.js';
import { GATEWAY_HOST, GATEWAY_PORT } from '../gateway/config.js';
import { credentialSecrets, describeEntry, entryHost, type EgressEntry } from '../pipeline/credentials.js';
import type { AgentFile, BudgetFile, CredentialFile, Isolation, PipelineFile } from '../pipeline/schema.js';
import { nearest, wayOf, type Levels } from '../pipeline/step-way.js';
import { CONTAINER_PATHS } from './render.js';
import { planCaches, type CachePlan } from './cache-plan.js';
import { DEVCONTAINER_IMAGE } from '../container/devcontainer/config.js';

/** A step behind a gateway has this as its network until the run gives it one of its own. */
export const GATEWAY_NETWORK = 'gateway';
export const GATEWAY_URL = `http://${GATEWAY_HOST}:${GATEWAY_PORT}`;
/** What an agent's CLI holds in place of its key: the gateway adds the real one on the way out. */
export const PLACEHOLDER_KEY = 'runner-gateway-placeholder';

/** The usual proxy variables, both cases, so ordinary tools go through the gateway. */
export const PROXY_ENV: Readonly<Record<string, string>> = {
  HTTP_PROXY: GATEWAY_URL,
  http_proxy: GATEWAY_URL,
  HTTPS_PROXY: GATEWAY_URL,
  https_proxy: GATEWAY_URL,
  NO_PROXY: `${GATEWAY_HOST},localhost,127.0.0.1`,
  no_proxy: `${GATEWAY_HOST},localhost,127.0.0.1`,
};

/** A step's gateway: where it may go, the model API it stands in for, what the step may spend. */
export interface GatewayPlan {
  /** the hosts it allows (with their ports), as the gateway's allow list */
  egress: string[];
  model?: { kind: ModelApi['kind']; upstream: string; credential?: string };
  budget?: BudgetFile;
  /** egress entries written as objects: method and path rules (and stream:), the entry in the file's words as `rule` */
  rules?: EgressRulePlan[];
  /** the credentials it adds, as the file wrote them: `${SECRET}` templates, never a value (filled in as the gateway starts) */
  credentials?: CredentialPlan[];
  /** inspect: all: every allowed host inspected */
  inspectAll?: boolean;
}

export interface EgressRulePlan {
  /** the host as written, with its port if any */
  host: string;
  methods?: string[];
  paths?: string[];
  stream?: boolean;
  rule: string;
}

export interface CredentialPlan {
  name: string;
  hosts: string[];
  /** header name → a template of secret names; or basic, made into an Authorization header */
  header?: Record<string, string>;
  basic?: { username: string; password: string };
  /** the secrets its templates name */
  secrets: string[];
}

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
  /** an approval gate: it runs no container (src/run/gate.ts); the rest of the plan is unused */
  approval?: { prompt: string; timeoutMs?: number; notify?: string[] };
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
  /** `none`, `bridge`, a docker network, or GATEWAY_NETWORK (then `gateway` says the rest) */
  network: string;
  gateway?: GatewayPlan;
  timeoutMs: number;
  /** `auto` or `uid[:gid]` */
  user: string;
  continueOnError: boolean;
  /** runner apply / merge require this step to have completed */
  verify: boolean;
  /** swarm placement constraints (the local engine has one node) */
  placement?: string[];
  /** the project's caches mounted into the step (src/cache/) */
  caches: CachePlan[];
  /** the sandbox its container runs in: step, agent, defaults, then the runner's --isolation, then runc */
  isolation: Isolation;
}

/** What the runner was told for every step that does not say (--isolation, RUNNER_ISOLATION). */
export interface PlanOptions {
  isolation?: Isolation;
}

export function planSteps(p: PipelineFile, opts: PlanOptions = {}): StepPlan[] {
  const d = p.defaults ?? {};
  return p.steps.map((s, index) => {
    const a: AgentFile = s.agent !== undefined ? (p.agents?.[s.agent] ?? {}) : {};
    const preset = a.use !== undefined ? PRESETS[a.use] : undefined;
    const settings = { model: a.model, maxTurns: a.max_turns, baseUrl: a.base_url };
    // defaults' network: is for plain steps; an agent preset keeps its gateway unless its step or agent says otherwise
    const fallback = wayOf(d);
    const way = wayOf(s) ?? wayOf(a) ?? (preset && fallback && 'network' in fallback ? undefined : fallback);
    const api = preset && !('network' in (way ?? {})) ? preset.api(settings) : undefined;
    // The nearest of step, agent and defaults that says network: or egress: decides; an agent preset goes through a gateway unless told otherwise.
    const entries: EgressEntry[] | undefined = way && 'egress' in way ? way.egress : api ? [] : undefined;
    const egress = entries?.map(entryHost);
    // credentials: and inspect: likewise, each on its own (validate refuses credentials a step's way cannot reach)
    const levels: Levels = { defaults: d, agent: a, step: s, preset: preset !== undefined, at: { defaults: ['defaults'], agent: ['agent'], step: ['step'] } };
    const credentials = way && 'network' in way ? [] : (nearest(levels, 'credentials')?.value ?? []).flatMap((n) => (p.credentials?.[n] ? [credentialPlan(n, p.credentials[n])] : []));
    const rules = (entries ?? []).flatMap((e) => (typeof e === 'string' ? [] : [{ ...e, rule: describeEntry(e) }]));
    const inspectAll = nearest(levels, 'inspect')?.value === 'all';
    // a step whose gateway holds credentials or rules has one, whatever else it says
    const gated = egress !== undefined && (egress.length > 0 || api !== undefined || credentials.length > 0);
    // Behind a gateway, the CLI calls the gateway, which knows the real endpoint.
    const cliSettings = gated && api ? { ...settings, baseUrl: GATEWAY_URL } : settings;
    const ownCommand = s.run !== undefined || s.command !== undefined;
    const agentCommand = a.run !== undefined || a.command !== undefined;
    // The preset's headless command, unless the step or the agent says what to run.
    const usesPreset = preset !== undefined && !ownCommand && !agentCommand;
    const run = ownCommand ? s.run : agentCommand ? a.run : usesPreset ? preset.script(cliSettings, `${CONTAINER_PATHS.io}/${AGENT_RESULT_FILE}`) : undefined;
    const command = ownCommand ? s.command : agentCommand ? a.command : undefined;
    const wanted = [...new Set([...(a.secrets ?? presetCredentials(preset, p)), ...(s.secrets ?? [])])];
    // No credential of the model API enters a gated container: the gateway holds the one it uses.
    const credential = gated && api ? api.keyEnv.find((k) => wanted.includes(k)) : undefined;
    const keyless = gated && api ? wanted.filter((k) => !api.keyEnv.includes(k)) : wanted;
    const gatewayEnv = gated ? { ...PROXY_ENV, ...(api ? { [credential ?? api.keyEnv[0]!]: PLACEHOLDER_KEY } : {}) } : {};
    const plan: StepPlan = {
      index,
      id: s.id,
      // defaults' image: devcontainer is the agents' too (their CLI added to it); another default image is not
      image: s.image ?? a.image ?? (d.image === DEVCONTAINER_IMAGE ? d.image : undefined) ?? preset?.image ?? d.image ?? '',
      env: { ...(p.env ?? {}), ...(preset?.env(cliSettings) ?? {}), ...(a.env ?? {}), ...(s.env ?? {}), ...gatewayEnv },
      secrets: keyless,
      outputs: s.outputs ?? [],
      memoryBytes: s.resources?.memory ?? a.resources?.memory ?? d.resources?.memory ?? BUILTIN_DEFAULTS.memoryBytes,
      cpus: s.resources?.cpus ?? a.resources?.cpus ?? d.resources?.cpus ?? BUILTIN_DEFAULTS.cpus,
      pids: s.resources?.pids ?? a.resources?.pids ?? d.resources?.pids ?? BUILTIN_DEFAULTS.pids,
      openFiles: s.resources?.open_files ?? a.resources?.open_files ?? d.resources?.open_files ?? BUILTIN_DEFAULTS.openFiles,
      fileSizeBytes: s.resources?.file_size ?? a.resources?.file_size ?? d.resources?.file_size ?? BUILTIN_DEFAULTS.fileSizeBytes,
      readOnlyRoot: s.read_only ?? a.read_only ?? d.read_only ?? false,
      capAdd: s.cap_add ?? a.cap_add ?? d.cap_add ?? [],
      network: gated ? GATEWAY_NETWORK : way && 'network' in way ? way.network : BUILTIN_DEFAULTS.network,
      timeoutMs: s.timeout ?? a.timeout ?? d.timeout ?? BUILTIN_DEFAULTS.timeoutMs,
      user: s.user ?? a.user ?? d.user ?? BUILTIN_DEFAULTS.user,
      continueOnError: s.continue_on_error ?? false,
      verify: s.verify ?? false,
      caches: planCaches(s.cache, a.cache, d.cache),
      isolation: s.isolation ?? a.isolation ?? d.isolation ?? opts.isolation ?? 'runc',
    };
    if (s.approval) {
      plan.approval = { prompt: s.approval.prompt, ...(s.approval.timeout !== undefined ? { timeoutMs: s.approval.timeout } : {}), ...(s.approval.notify ? { notify: s.approval.notify } : {}) };
      return plan;
    }
    if (gated) {
      plan.gateway = {
        egress: egress!,
        ...(api ? { model: { kind: api.kind, upstream: api.upstream, ...(credential ? { credential } : {}) } } : {}),
        ...(a.budget ? { budget: a.budget } : {}),
        ...(rules.length ? { rules } : {}),
        ...(credentials.length ? { credentials } : {}),
        ...(inspectAll ? { inspectAll } : {}),
      };
    }
    if (s.agent !== undefined) plan.agent = s.agent;
    if (usesPreset) {
      plan.preset = preset.name;
      plan.agentSettings = settings;
    }
    if (run !== undefined) plan.run = run;
    if (command !== undefined) plan.command = command;
    if (s.prompt !== undefined) plan.prompt = s.prompt;
    if (s.placement) plan.placement = s.placement;
    return plan;
  });
}

/** The credentials a preset accepts that the pipeline declares: what its agent gets when it names no secrets of its own. */
export function presetCredentials(preset: AgentPreset | undefined, p: Pick<PipelineFile, 'secrets'>): string[] {
  return preset ? preset.credentials.filter((c) => (p.secrets ?? []).includes(c)) : [];
}

/** Every secret some step (or its gateway) receives, for checking they exist before anything starts. */
export function secretsNeeded(plans: readonly StepPlan[]): string[] {
  return [
    ...new Set(
      plans.flatMap((p) => [...p.secrets, ...(p.gateway?.model?.credential ? [p.gateway.model.credential] : []), ...(p.gateway?.credentials ?? []).flatMap((c) => c.secrets)]),
    ),
  ].sort();
}

/** A credential as the file wrote it, its templates unfilled: a plan holds no secret's value. */
function credentialPlan(name: string, c: CredentialFile): CredentialPlan {
  return { name, hosts: c.hosts, ...(c.header ? { header: c.header } : {}), ...(c.basic ? { basic: c.basic } : {}), secrets: credentialSecrets(c) };
}

/** Who a step runs as when the project belongs to root: a step never runs as root unless the file says `user: "0:0"`. */
export const NONROOT_USER = { uid: 65532, gid: 65532 };

/** `auto` is the project's owner (or NONROOT_USER when that is root); else the explicit `uid[:gid]`. */
export function resolveUser(setting: string, owner: { uid: number; gid: number }): { uid: number; gid: number } {
  if (setting === 'auto') return owner.uid === 0 ? NONROOT_USER : owner;
  const [uid, gid] = setting.split(':').map(Number) as [number, number | undefined];
  return { uid, gid: gid ?? uid };
}

/** Steps whose agent holds its model's key on an open network: what validate warns of. */
export function openKeyWarnings(plans: readonly StepPlan[]): string[] {
  return plans
    .filter((p) => p.preset && !p.gateway && p.network !== 'none')
    .flatMap((p) => {
      const keys = p.secrets.filter((k) => PRESETS[p.preset!]?.credentials.includes(k));
      return keys.length
        ? [`step ${p.id}: its agent holds ${keys.join(', ')} on network ${p.network}, where anything the agent runs can read it and send it anywhere: drop network: to put the step behind the gateway, which keeps the key outside (docs/gateway.md)`]
        : [];
    });
}
