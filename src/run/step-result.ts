/** How a step ended, in one shape for success and failure. Pure. */
import type { AgentUsage } from '../agents/preset.js';
import { formatSize } from '../common/durations.js';
import type { Isolation } from '../pipeline/schema.js';
import type { ChangeList } from '../workspace/snapshot.js';
import type { BaseCheck } from './base-check.js';
import type { GateDecision } from './gate.js';

/** not_recorded: whatever the step did, some of its work is on no commit nor patch (`notRecorded`, or `unsaved`); its exit is in exitCode and limits */
export type StepStatus = 'completed' | 'failed' | 'timed_out' | 'oom' | 'budget_exhausted' | 'node_lost' | 'canceled' | 'skipped' | 'interrupted' | 'not_recorded';

export interface StepResult {
  id: string;
  status: StepStatus;
  exitCode: number | null;
  oomKilled: boolean;
  timedOut: boolean;
  durationMs: number;
  startedAt?: string;
  finishedAt?: string;
  commit: string | null;
  outputs: Record<string, string>;
  /** the limits that fired, each reported as itself */
  limits: LimitHit[];
  /** a code when the runner refused the step's work (workspace_tampered) */
  error?: string;
  /** where the step's work was saved when it could not be committed */
  patch?: string;
  /** the work could be neither committed nor saved as a patch (the workspace is kept) */
  unsaved?: boolean;
  /** paths of its work on no commit nor patch (the first 20, made visible; `count` of all): they stay in the workspace, which is kept */
  notRecorded?: { paths: string[]; count: number };
  /** persistent_directory: what the step added, modified and deleted */
  changes?: ChangeList;
  /** what a person should know: the limit that fired, an outputs problem */
  message?: string;
  /** an agent preset's step: what its CLI reported it used */
  usage?: AgentUsage;
  /** the agent profile the step used */
  agent?: string;
  /** the sandbox its container ran in (absent in records of older runners: runc) */
  isolation?: Isolation;
  /** the node it ran on (swarm) */
  node?: string;
  /**
   * behind a gateway: the hosts it refused the step, most refused first (`others`: refusals past the bound on hosts);
   * `rules`: requests an egress rule refused, by the rule as the file wrote it; `secrets`: requests stopped for
   * carrying a secret's value, by the secret's name (never its value)
   */
  egress?: {
    refused: Array<{ host: string; count: number }>;
    others?: number;
    rules?: Array<{ rule: string; count: number }>;
    secrets?: Array<{ secret: string; count: number }>;
  };
  // Flow (src/flow/): which run of the step this was, and how its work came back.
  /** visits and retries counted together: 1, 2, … (absent in records of older runners: 1) */
  attempt?: number;
  /** `implement#2`, `build[0]`: the name of its log, commit and entry, when it is not the id */
  name?: string;
  /** a for_each instance: its index and item */
  item?: { index: number; value: string };
  /** a step that could run at once with others worked on a branch of its own, merged back when it ended */
  lane?: { branch: string | null; merge: 'merged' | 'unchanged' | 'conflict' | 'not_merged'; commit?: string | null; files?: string[] };
  /** a failed attempt that runs again after this long */
  retryInMs?: number;
  /** a step a fork took over from the run it was forked from (not run again; its cost is that run's) */
  carried?: { from: string };
  /** an approval gate's decision */
  approval?: GateDecision;
  /** which start of the run this entry belongs to (src/run/record.ts attempts); absent: the first */
  runAttempt?: number;
  /** a failed verify step: whether it failed on the run's base too (base-check.ts) */
  base?: BaseCheck;
}

/** The name a step's run goes by in logs, commits and lists: `implement#2`, `build[0]`, or the id. */
export function resultName(r: Pick<StepResult, 'id' | 'name'>): string {
  return r.name ?? r.id;
}

/** Some of the step's work is on no commit nor patch: it is only in the workspace, which must be kept. Pure. */
export function workNotRecorded(r: Pick<StepResult, 'status' | 'unsaved'>): boolean {
  return r.status === 'not_recorded' || r.unsaved === true;
}

export type LimitHit = 'memory' | 'timeout' | 'pids' | 'file_size';

/** The limits that fired, from what the engine and the cgroup said. Pure. */
export function limitsHit(s: { status: StepStatus; pidsLimitHits?: number; exitCode: number | null }): LimitHit[] {
  const out: LimitHit[] = [];
  if (s.status === 'oom') out.push('memory');
  if (s.status === 'timed_out') out.push('timeout');
  if ((s.pidsLimitHits ?? 0) > 0) out.push('pids');
  // 128 + SIGXFSZ (25): the step's main process wrote past the file-size limit.
  if (s.status === 'failed' && s.exitCode === 153) out.push('file_size');
  return out;
}

/** The first cause that ended the step wins. */
export type EndReason = 'exit' | 'timeout' | 'canceled';

export function classify(reason: EndReason, exitCode: number | null, oomKilled: boolean): StepStatus {
  if (reason === 'timeout') return 'timed_out';
  if (reason === 'canceled') return 'canceled';
  if (oomKilled) return 'oom';
  return exitCode === 0 ? 'completed' : 'failed';
}

/** `completed`, `failed (exit 2)`, `timed out`, `oom`, `canceled`: for trailers and the console. */
export function describeStatus(status: StepStatus, exitCode: number | null): string {
  switch (status) {
    case 'failed':
      return `failed (exit ${exitCode ?? '?'})`;
    case 'timed_out':
      return 'timed out';
    case 'budget_exhausted':
      return 'budget exhausted';
    case 'node_lost':
      return 'node lost';
    case 'not_recorded':
      return exitCode === null ? 'work not recorded' : `work not recorded (exit ${exitCode})`;
    default:
      return status;
  }
}

/** A limit that fired, said with the step's bound and the setting that raises it. Pure. */
export function describeLimit(limit: LimitHit, plan: { memoryBytes: number; timeoutMs: number; pids: number; fileSizeBytes: number; isolation: Isolation }): string {
  switch (limit) {
    case 'memory':
      return `oom: killed at its memory limit of ${formatSize(plan.memoryBytes)} (raise resources.memory)`;
    case 'timeout':
      return `timed out: stopped at its timeout of ${Math.round(plan.timeoutMs / 1000)}s (raise timeout)`;
    case 'pids':
      // under gVisor the runner sees the sandbox reach its cap (where the next fork is refused), not each refusal
      return plan.isolation === 'gvisor'
        ? `pids limit reached: the sandbox held ${plan.pids} processes, its cap, where forks are refused (raise resources.pids)`
        : `pids limit reached: forks were refused at ${plan.pids} processes (raise resources.pids)`;
    case 'file_size':
      return `file size limit reached: a write past ${formatSize(plan.fileSizeBytes)} was refused (raise resources.file_size)`;
  }
}
