/**
 * A StepPlan and what is known at run time (the run's inputs, outputs of
 * earlier steps, the run's identity) → the argv and environment of the step's
 * container. Pure.
 */
import { renderScript, renderTemplate, type Expression } from '../pipeline/template.js';
import type { StepPlan } from './step-plan.js';

export interface RunIdentity {
  runId: string;
  pipeline: string;
  branch: string;
  baseSha: string;
  /** which run of this step: visits and retries counted together */
  attempt: number;
  /** how many runs have used the workspace (a task's runs), this one included */
  taskRun: number;
  /** empty outside a task */
  taskId: string;
  /** the comment of the run's latest approval (src/run/gate.ts), for the steps after a gate */
  approvalComment?: string;
}

/** `$RUNNER_APPROVAL_COMMENT` (or `${RUNNER_APPROVAL_COMMENT}`) in a prompt: the reviewer's words, as an agent's prompt is no shell. */
const APPROVAL_COMMENT_RE = /\$\{RUNNER_APPROVAL_COMMENT\}|\$RUNNER_APPROVAL_COMMENT(?![A-Za-z0-9_])/g;

export interface RenderedStep {
  cmd: string[];
  env: Record<string, string>;
  /** the step's secrets, apart from `env`: they reach its process, never its container's config (container/secret-env.ts) */
  secretEnv: Record<string, string>;
}

export const CONTAINER_PATHS = {
  workspace: '/home/agent/run-workspace',
  project: '/home/agent/project-workspace',
  io: '/home/agent/.runner',
  output: '/home/agent/.runner/output',
  home: '/home/agent',
} as const;

export function renderStep(
  plan: StepPlan,
  outputs: ReadonlyMap<string, Record<string, string>>,
  id: RunIdentity,
  secretValues: Readonly<Record<string, string>>,
  inputs: Readonly<Record<string, string>> = {},
  item?: { index: number; value: string },
): RenderedStep {
  const known = (expr: Expression): string => {
    if (expr.kind === 'item') return item?.value ?? '';
    if (expr.kind === 'input') return Object.hasOwn(inputs, expr.name) ? (inputs[expr.name] ?? '') : '';
    if (expr.kind === 'output') {
      const values = outputs.get(expr.step);
      return values && Object.hasOwn(values, expr.key) ? (values[expr.key] ?? '') : '';
    }
    return '';
  };
  const prompt = plan.prompt === undefined ? undefined : renderTemplate(plan.prompt, known).replace(APPROVAL_COMMENT_RE, () => id.approvalComment ?? '');
  const resolve = (expr: Expression): string => (expr.kind === 'prompt' ? (prompt ?? '') : known(expr));

  let cmd: string[];
  let scriptEnv: Record<string, string> = {};
  if (plan.run !== undefined) {
    const r = renderScript(plan.run, resolve);
    cmd = ['sh', '-e', '-c', r.script];
    scriptEnv = r.env;
  } else {
    cmd = (plan.command ?? []).map((arg) => renderTemplate(arg, resolve));
  }

  // What the runner sets itself wins over the file's env: and a secret of the same name; a secret wins over env:.
  const own: Record<string, string> = {
    ...scriptEnv,
    HOME: CONTAINER_PATHS.home,
    RUNNER_RUN_ID: id.runId,
    RUNNER_STEP_ID: plan.id,
    RUNNER_PIPELINE: id.pipeline,
    RUNNER_BRANCH: id.branch,
    RUNNER_BASE_SHA: id.baseSha,
    RUNNER_ATTEMPT: String(id.attempt),
    RUNNER_TASK_ID: id.taskId,
    RUNNER_TASK_RUN: String(id.taskRun),
    RUNNER_OUTPUT: CONTAINER_PATHS.output,
    ...(prompt !== undefined ? { RUNNER_PROMPT: prompt } : {}),
    ...(item ? { RUNNER_ITEM: item.value, RUNNER_ITEM_INDEX: String(item.index) } : {}),
    ...(id.approvalComment !== undefined ? { RUNNER_APPROVAL_COMMENT: id.approvalComment } : {}),
  };
  const env: Record<string, string> = {};
  for (const [k, v] of Object.entries(plan.env)) env[k] = renderTemplate(v, resolve);
  const secretEnv: Record<string, string> = {};
  for (const name of plan.secrets) {
    const value = secretValues[name];
    if (value === undefined || Object.hasOwn(own, name)) continue;
    secretEnv[name] = value;
    delete env[name];
  }
  Object.assign(env, own);
  return { cmd, env, secretEnv };
}
