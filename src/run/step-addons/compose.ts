/**
 * The add-ons' parts put together: the step's container spec with what each
 * added, and the step's status and report from what each reported. Pure.
 */
import type { AgentUsage } from '../../agents/preset.js';
import type { ContainerSpec, ExitState } from '../../container/runtime.js';
import { classify, type EndReason, type StepResult, type StepStatus } from '../step-result.js';
import type { AddonPart, AddonReport, StepWayPart } from './addon.js';

/**
 * `base`: the step's own container (its workspace and io mounted, its plan's network, its own env); the parts, in
 * the add-ons' order: mounts and files after the step's own, env under (`envDefaults`) and over (`env`) the
 * step's own, the last way given in place of the plan's network, every hold.
 */
export function specWith(base: ContainerSpec, parts: readonly AddonPart[]): { spec: ContainerSpec; way: StepWayPart | undefined } {
  const way = parts.reduce<StepWayPart | undefined>((w, p) => p.way ?? w, undefined);
  const holds = parts.flatMap((p) => (p.holdUntil ? [p.holdUntil] : []));
  const files = parts.flatMap((p) => p.files ?? []);
  const spec: ContainerSpec = {
    ...base,
    env: Object.assign({}, ...parts.map((p) => p.envDefaults ?? {}), base.env, ...parts.map((p) => p.env ?? {})) as Record<string, string>,
    mounts: [...base.mounts, ...parts.flatMap((p) => p.mounts ?? [])],
    ...(files.length ? { files: [...(base.files ?? []), ...files] } : {}),
    ...(way ? { network: way.network, ...(way.dns ? { dns: way.dns } : {}), ...(way.hosts ? { hosts: way.hosts } : {}) } : {}),
    ...(holds.length ? { holdUntil: holds.length === 1 ? holds[0]! : Promise.all(holds).then(() => undefined) } : {}),
  };
  return { spec, way };
}

/** The add-ons' reports as one. */
export interface Reported {
  said: Set<NonNullable<AddonReport['status']>>;
  usage?: AgentUsage;
  egress?: StepResult['egress'];
  error?: string;
  problems: string[];
  outputs: Record<string, string>;
}

/**
 * `reports` in the order the add-ons were closed (the reverse of their opening): a usage reported later replaces an
 * earlier one (the gateway's sums, the CLI's count); problems come out in the order the add-ons opened.
 */
export function mergeReports(reports: ReadonlyArray<AddonReport | undefined>): Reported {
  const r: Reported = { said: new Set(), problems: [], outputs: {} };
  for (const x of reports) {
    if (!x) continue;
    if (x.status) r.said.add(x.status);
    if (x.usage) r.usage = x.usage;
    if (x.egress) r.egress = x.egress;
    if (x.error) r.error = x.error;
    r.problems.unshift(...(x.problems ?? []));
    Object.assign(r.outputs, x.outputs ?? {});
  }
  return r;
}

/** The step's status: an add-on's budget first, then the engine's problem (a lost node), an add-on's failure, the exit. */
export function stepStatus(end: { reason: EndReason; exitCode: number | null; oomKilled: boolean; problem?: ExitState['problem'] }, said: ReadonlySet<string>): StepStatus {
  if (said.has('budget_exhausted')) return 'budget_exhausted';
  if (end.problem && end.reason === 'exit') return end.problem.status;
  if (said.has('failed')) return 'failed';
  return classify(end.reason, end.exitCode, end.oomKilled);
}
