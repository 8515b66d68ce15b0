/**
 * The zod schema of a pipeline file (see docs in README and
 * shared/design/pipeline-format.md). Pure: no I/O.
 * Phase 1 of validation; cross-references are checked in rules.ts.
 */
import { NOTIFY_KEYS, notifySchema } from '../notify/schema.js';
import { z } from 'zod';
import { PRESET_NAMES } from '../agents/presets.js';
import { parseDuration, parseSize } from '../common/durations.js';
import { cacheSetting } from './cache-setting.js';
import { BASIC_KEYS, CREDENTIAL_KEYS, credentialSchema, EGRESS_RULE_KEYS, egressEntrySchema, inspectSchema } from './credentials.js';

export const NAME_RE = /^[A-Za-z0-9._-]+$/;
export const STEP_ID_RE = /^[a-z0-9_-]+$/;
export const ENV_NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Node's timers hold at most 2^31-1 ms (24.8 days). */
export const MAX_DURATION_MS = 24 * 86_400_000;

const duration = z.unknown().transform((v, ctx) => {
  const ms = typeof v === 'string' ? parseDuration(v) : undefined;
  if (ms === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a duration like 90s, 30m or 1h, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  if (ms > MAX_DURATION_MS) {
    ctx.addIssue({ code: 'custom', message: `expected a duration of at most 24d, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return ms;
});

const size = z.unknown().transform((v, ctx) => {
  const bytes = typeof v === 'number' ? (v > 0 ? v : undefined) : typeof v === 'string' ? parseSize(v) : undefined;
  if (bytes === undefined) {
    ctx.addIssue({ code: 'custom', message: `expected a size like 512m or 2g, got ${JSON.stringify(v)}` });
    return z.NEVER;
  }
  return bytes;
});

const envName = z.string().regex(ENV_NAME_RE, 'expected an environment variable name like MY_VAR');
const envMap = z.record(envName, z.union([z.string(), z.number(), z.boolean()]).transform(String));

const resources = z.strictObject({
  memory: size.optional(),
  cpus: z.number({ error: 'expected a number of CPUs, like 1.5' }).positive('expected a positive number of CPUs, like 1.5').optional(),
  pids: z.number({ error: 'expected a whole number of processes, like 512' }).int().positive('expected a positive whole number of processes').optional(),
  open_files: z.number({ error: 'expected a whole number of open files, like 4096' }).int().min(16, 'expected a whole number of open files, at least 16').optional(),
  file_size: size.optional(),
});

const network = z.string().min(1, 'expected none, bridge or a docker network name');
const user = z
  .string()
  .regex(/^(auto|\d+(:\d+)?)$/, 'expected auto, or a numeric uid or uid:gid like 1000:1000');

/** What a step (an agent's), a run or a pipeline's day may spend on model calls, metered by the gateway. */
export const budgetSchema = z
  .strictObject({
    usd: z.number({ error: 'expected an amount in US dollars, like 5' }).positive('expected a positive amount, like 5').optional(),
    tokens: z.number({ error: 'expected a whole number of tokens, like 2000000' }).int().positive('expected a positive whole number of tokens').optional(),
  })
  .refine((b) => b.usd !== undefined || b.tokens !== undefined, 'expected usd:, tokens: or both, like { usd: 5 }');

/** USD per million tokens of one model, overriding the built-in table (src/gateway/prices.ts). */
const priceSchema = z.strictObject({
  input: z.number({ error: 'expected USD per million input tokens, like 3' }).min(0),
  output: z.number({ error: 'expected USD per million output tokens, like 15' }).min(0),
  cache_read: z.number().min(0).optional(),
  cache_write: z.number().min(0).optional(),
});

/** runc: a container on the host's kernel; gvisor: under gVisor's runsc, a kernel of its own in user space. */
export const ISOLATIONS = ['runc', 'gvisor'] as const;
export type Isolation = (typeof ISOLATIONS)[number];

/** Settings a step, an agent profile or `defaults` may carry. */
export const stepSettings = {
  /** an image name, or `devcontainer`: the project's .devcontainer/devcontainer.json, prepared once (docs/devcontainer.md) */
  image: z.string().min(1).optional(),
  resources: resources.optional(),
  network: network.optional(),
  /**
   * hosts the step may reach through its gateway (exact names, `*.` suffixes), each a name or `{ host, methods, paths,
   * stream }` (rules the gateway judges each request by); an agent preset's model API is always allowed
   */
  egress: z.array(egressEntrySchema).optional(),
  /** names of the file's credentials: the step's gateway adds them on their hosts, the step never sees them */
  credentials: z.array(z.string().min(1, 'expected the name of one of the top-level credentials:')).optional(),
  /** all: every allowed host is inspected (TLS ended at the gateway, secrets checked); rules (default): only hosts with a credential or a rule */
  inspect: inspectSchema.optional(),
  timeout: duration.optional(),
  user: user.optional(),
  read_only: z.boolean().optional(),
  cap_add: z.array(z.string().regex(/^(CAP_)?[A-Z_]+$/, 'expected a capability name like NET_BIND_SERVICE')).optional(),
  /** the project's caches the step gets (src/cache/): [npm, pip], or { npm: ro, mytool: { path: /x, max: 1g } } */
  cache: cacheSetting.optional(),
  /** the sandbox the step's container runs in: runc (the host's kernel, the default) or gvisor (a kernel of its own; docs/gvisor.md) */
  isolation: z.enum(ISOLATIONS, { error: `expected ${ISOLATIONS.join(' or ')}` }).optional(),
};

const command = z.array(z.string()).min(1, 'expected a non-empty list of arguments');

export const agentSchema = z.strictObject({
  /** a preset: the CLI's image, headless command, environment, network and result (src/agents/) */
  use: z.enum(PRESET_NAMES as [string, ...string[]], { error: `expected one of ${PRESET_NAMES.join(', ')} (the presets this runner has)` }).optional(),
  model: z.string().min(1).regex(/^[^\s'"\\$`]+$/, 'expected a model name like claude-sonnet-4-5 (no spaces, quotes or ${{ }}: the name is given to the CLI as it is)').optional(),
  max_turns: z.number({ error: 'expected a whole number of turns, like 40' }).int().positive('expected a whole number of turns, like 40').optional(),
  /** the model API's root (with or without /v1): a gateway, a proxy, a self-hosted endpoint */
  base_url: z.url({ protocol: /^https?$/, error: 'expected an http or https URL, like http://gateway:8080' }).regex(/^[^\s'"\\$`]+$/, 'expected a URL without spaces, quotes or ${{ }}').optional(),
  ...stepSettings,
  /** what each step of this agent may spend on model calls */
  budget: budgetSchema.optional(),
  command: command.optional(),
  run: z.string().optional(),
  env: envMap.optional(),
  secrets: z.array(envName).optional(),
});

/** Where a step's output sends the run next: a value → an earlier step (or itself); any other value, on. */
export const routeSchema = z.strictObject({
  output: z.string().regex(ENV_NAME_RE, 'expected the name of one of the step\'s outputs'),
  to: z.record(z.string().min(1), z.string().regex(STEP_ID_RE, 'expected a step id')).refine((m) => Object.keys(m).length > 0, 'expected at least one value: step'),
});

/** A failed, timed-out or out-of-memory attempt runs again, after backoff (doubling, at most 10m). */
export const retriesSchema = z.strictObject({
  max: z.number({ error: 'expected a whole number of retries, like 2' }).int().min(0, 'expected 0 or more').max(20, 'expected at most 20 retries'),
  backoff: duration.optional(),
});

/** A gate: the run waits here, holding nothing, until a person approves or rejects it (src/run/gate.ts). */
export const approvalSchema = z.strictObject({
  /** what the person is asked, shown at every door */
  prompt: z.string().min(1, 'expected what the person deciding is asked, like "Read PLAN.md; approve to implement it"'),
  /** then the run ends rejected (timed out), its work kept; default 7d */
  timeout: duration.optional(),
  /** notify: entries told when the run reaches the gate (names of the top-level notify:) */
  notify: z.array(z.string()).optional(),
});

export const stepSchema = z.strictObject({
  id: z.string().regex(STEP_ID_RE, 'expected a step id of lowercase letters, digits, _ and -'),
  name: z.string().optional(),
  agent: z.string().optional(),
  ...stepSettings,
  run: z.string().optional(),
  command: command.optional(),
  prompt: z.string().optional(),
  /** an approval gate rather than a container: no run:, command: or agent: */
  approval: approvalSchema.optional(),
  outputs: z.array(envName).optional(),
  env: envMap.optional(),
  secrets: z.array(envName).optional(),
  continue_on_error: z.boolean().optional(),
  /** a step whose success runner apply / merge require */
  verify: z.boolean().optional(),
  /** --engine swarm: swarm placement constraints, e.g. ["node.labels.gpu == true"] */
  placement: z.array(z.string().regex(/^[A-Za-z0-9._-]+\s*(==|!=)\s*\S+$/, 'expected a swarm constraint like "node.labels.gpu == true"')).optional(),
  // Flow (src/flow/): what a step waits for, where its outcome sends the run, how often it may run.
  /** steps that must have succeeded first; without it, the step before in the file */
  needs: z.array(z.string().regex(STEP_ID_RE, 'expected a step id')).optional(),
  /** how often the run may come here (its first visit counts): the bound of a review loop */
  max_visits: z.number({ error: 'expected a whole number of visits, like 3' }).int().min(1, 'expected at least 1 visit').max(100, 'expected at most 100 visits').optional(),
  route: routeSchema.optional(),
  retries: retriesSchema.optional(),
  /** one instance of the step per item of a JSON list of strings */
  for_each: z.string().min(1).optional(),
  /** for_each: how many instances run at once */
  max_parallel: z.number({ error: 'expected a whole number, like 3' }).int().min(1, 'expected at least 1').optional(),
  /** for_each: the longest list the step takes (a longer one fails the step that made it) */
  max_items: z.number({ error: 'expected a whole number, like 20' }).int().min(1, 'expected at least 1').max(1000, 'expected at most 1000').optional(),
});

export const projectSchema = z.strictObject({
  path: z.string().min(1).default('.'),
  workspace: z.enum(['git_worktree', 'persistent_directory']).optional(),
  base: z.string().min(1).optional(),
  remote: z.string().min(1).default('origin'),
  push: z.enum(['auto', 'always', 'never']).default('auto'),
});

export const scheduleSchema = z.strictObject({
  cron: z.string().regex(/^\S+(\s+\S+){4}$/, 'expected a 5-field cron expression like "0 6 * * 1-5"'),
  timezone: z.string().optional(),
  overlap: z.enum(['skip', 'queue', 'allow']).default('skip'),
  /** after the server was down: one run for the fires it missed */
  catchup: z.boolean().default(false),
  /** what the pipeline's runs may spend on model calls per day (UTC), under runner serve */
  budget_per_day: budgetSchema.optional(),
});

/** A value a run is started with (runner exec --input, the API's trigger); used as ${{ inputs.<name> }}. */
export const inputSchema = z.strictObject({
  description: z.string().optional(),
  /** without one, every run must be given a value (and the pipeline cannot be scheduled) */
  default: z.union([z.string(), z.number(), z.boolean()]).transform(String).optional(),
});

export const hooksSchema = z.strictObject({
  timeout: duration.optional(),
  after_create: z.string().optional(),
  before_run: z.string().optional(),
  after_run: z.string().optional(),
  before_remove: z.string().optional(),
});

export const pipelineSchema = z.strictObject({
  version: z.literal(1, 'expected version: 1'),
  name: z
    .string()
    .regex(NAME_RE, 'expected a name of letters, digits, ".", "_" and "-"')
    .refine((n) => n !== '.' && n !== '..', 'a name cannot be "." or ".."'),
  description: z.string().optional(),
  project: projectSchema.default({ path: '.', remote: 'origin', push: 'auto' }),
  defaults: z.strictObject(stepSettings).optional(),
  env: envMap.optional(),
  secrets: z.array(envName).optional(),
  /** name → a header or HTTP basic made of secrets, which a step's gateway adds on the named hosts: the step never holds it */
  credentials: z.record(z.string().regex(NAME_RE, 'expected a credential name of letters, digits, ".", "_" and "-"'), credentialSchema).optional(),
  inputs: z.record(z.string().regex(ENV_NAME_RE, 'expected an input name of letters, digits and "_", like topic'), inputSchema).optional(),
  agents: z.record(z.string().regex(NAME_RE, 'expected an agent name of letters, digits, ".", "_" and "-"'), agentSchema).optional(),
  steps: z.array(stepSchema).min(1, 'a pipeline needs at least one step'),
  schedule: z.array(scheduleSchema).optional(),
  hooks: hooksSchema.optional(),
  /** what one run may spend on model calls, all its steps together */
  budget: budgetSchema.optional(),
  /** model → USD per million tokens, over the built-in price table */
  prices: z.record(z.string().min(1), priceSchema).optional(),
  /** how many steps (and for_each instances) run at once; default: the machine's cores */
  max_parallel: z.number({ error: 'expected a whole number, like 4' }).int().min(1, 'expected at least 1').optional(),
  /** persistent_directory: steps may run at once in the one directory */
  shared_workspace: z.boolean().optional(),
  /** name → a webhook the runner POSTs to when a run ends with one of its `on:` statuses (src/notify/) */
  notify: notifySchema.optional(),
  delivery: z
    .strictObject({
      /** globs a run's change must stay within to be applied or merged */
      paths: z.array(z.string().min(1)).min(1, 'expected at least one glob, like src/**'),
    })
    .optional(),
});

export type PipelineFile = z.output<typeof pipelineSchema>;
export type StepFile = z.output<typeof stepSchema>;
export type AgentFile = z.output<typeof agentSchema>;
export type BudgetFile = z.output<typeof budgetSchema>;
export type { CredentialFile, EgressEntry, EgressRule } from './credentials.js';

/** Every key the schema knows at each level, for "did you mean" hints. */
export const KNOWN_KEYS = {
  root: Object.keys(pipelineSchema.shape),
  project: Object.keys(projectSchema.shape),
  step: Object.keys(stepSchema.shape),
  route: Object.keys(routeSchema.shape),
  retries: Object.keys(retriesSchema.shape),
  approval: Object.keys(approvalSchema.shape),
  agent: Object.keys(agentSchema.shape),
  resources: Object.keys(resources.shape),
  schedule: Object.keys(scheduleSchema.shape),
  budget: ['usd', 'tokens'],
  input: Object.keys(inputSchema.shape),
  delivery: ['paths'],
  notify: NOTIFY_KEYS,
  hooks: Object.keys(hooksSchema.shape),
  defaults: Object.keys(stepSettings),
  credential: CREDENTIAL_KEYS,
  basic: BASIC_KEYS,
  egressRule: EGRESS_RULE_KEYS,
};
