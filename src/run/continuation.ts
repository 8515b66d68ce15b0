/**
 * A run that goes on from where another left off: `resume` (the same run, on
 * its own branch: after a failure, a cancel, a spent budget, or an approval)
 * and `fork` (a new run whose branch begins where the old one was just before
 * a step). The steps it does not run again are carried: the flow is given
 * their outcome and outputs as recorded, and nothing of them runs. Pure.
 */
import { RunnerError } from '../common/errors.js';
import type { DeliveredBy, RunRecord } from './record.js';
import { resultName, type StepResult } from './step-result.js';

export interface Continuation {
  kind: 'resume' | 'fork';
  /** why: a person resumed it, a gate was approved, or a fork */
  how: 'resume' | 'approval' | 'fork';
  /** the run it continues (resume: this run's record as it was; fork: the run forked from) */
  prior: RunRecord;
  /** units not run again, by name: their records as the prior run kept them */
  carry: ReadonlyMap<string, StepResult>;
  /** the step it begins at, for the record and the console */
  from: string;
  /** fork: the commit the new branch begins at */
  startAt?: string;
  by?: DeliveredBy;
}

/** The statuses a run may be resumed from. */
export const RESUMABLE = ['failed', 'interrupted', 'canceled', 'error', 'awaiting_approval'] as const;

/** Whether a step's record may be carried: it completed, and its work is on the run's branch (not left on a lane). */
function carriable(s: StepResult): boolean {
  if (s.status !== 'completed') return false;
  return !s.lane || s.lane.merge === 'merged' || s.lane.merge === 'unchanged';
}

/** The unit an entry is a run of: `verify~2` (run again by a resume) is `verify`, as the flow names it. */
function unitOf(s: StepResult): string {
  return resultName(s).replace(/~\d+$/, '');
}

/** Resume: every unit the run completed is carried; it goes on from the first that did not. */
export function resumePlan(prior: RunRecord): { carry: Map<string, StepResult>; from: string } {
  if (!(RESUMABLE as readonly string[]).includes(prior.status)) {
    const why =
      prior.status === 'succeeded'
        ? 'it succeeded: there is nothing left to run (fork it to run a step again: runner fork RUN --from STEP)'
        : prior.status === 'running' || prior.status === 'queued'
          ? 'it has not ended'
          : prior.status === 'rejected'
            ? 'it was rejected at a gate (fork it to try again: runner fork RUN --from STEP)'
            : `its status is ${prior.status}`;
    throw new RunnerError('not_resumable', `run ${prior.runId} cannot be resumed: ${why}`);
  }
  if (prior.workspace === 'task_worktree') {
    throw new RunnerError('not_resumable', `run ${prior.runId} worked in a task's worktree, which later runs of the task reuse: start the task again instead`);
  }
  if (prior.workspace === 'git_worktree' && !prior.branch) {
    throw new RunnerError('not_resumable', `run ${prior.runId} has no branch (it stopped before its worktree was made): start it again instead`);
  }
  const carry = new Map<string, StepResult>();
  for (const s of prior.steps) if (carriable(s)) carry.set(unitOf(s), s);
  const firstOpen = prior.gate?.name ?? prior.steps.find((s) => !carry.has(unitOf(s)) && s.status !== 'skipped')?.id ?? prior.steps.find((s) => s.status === 'skipped')?.id;
  return { carry, from: firstOpen ?? 'the first step not completed' };
}

/**
 * Fork from `step`: the units that completed before its first run are carried,
 * and the new branch begins at the run's commit just before it (the last
 * commit those units made, or the run's base).
 */
export function forkPlan(prior: RunRecord, step: string): { carry: Map<string, StepResult>; startAt: string } {
  if (prior.workspace !== 'git_worktree' || !prior.branch || !prior.baseSha) {
    throw new RunnerError('not_forkable', `run ${prior.runId} ${prior.workspace === 'persistent_directory' ? 'worked in a persistent directory, which has no commits to begin a branch at' : prior.workspace === 'task_worktree' ? "worked in a task's worktree: fork a run of its own pipeline instead" : 'has no branch'}`);
  }
  if (prior.status === 'running' || prior.status === 'queued') throw new RunnerError('not_forkable', `run ${prior.runId} has not ended: fork it once it has (or cancel it)`);
  const at = prior.steps.findIndex((s) => s.id === step);
  if (at === -1) {
    const ids = [...new Set(prior.steps.filter((s) => s.status !== 'skipped').map((s) => s.id))];
    throw new RunnerError('bad_request', `run ${prior.runId} has no step ${JSON.stringify(step)} that ran${ids.length ? `; its steps: ${ids.join(', ')}` : ''}`);
  }
  if (prior.steps[at]!.status === 'skipped') throw new RunnerError('bad_request', `step ${step} of run ${prior.runId} never ran: resume the run instead (runner resume ${prior.runId})`);
  const before = prior.steps.slice(0, at).filter(carriable);
  const carry = new Map(before.map((s) => [unitOf(s), s] as const));
  let startAt = prior.baseSha;
  for (const s of prior.steps.slice(0, at)) {
    // every commit the run's branch got before the step, a tolerated failure's too
    const onBranch = !s.lane || s.lane.merge === 'merged';
    const commit = s.lane ? s.lane.commit : s.commit;
    if (commit && onBranch) startAt = commit;
  }
  return { carry, startAt };
}

/**
 * The prior run's steps whose work a continued run's branch begins with, beyond those it records as carried: a
 * fork's steps before its step, every one (a failed agent step's commit is on the branch, though it is not carried).
 * A resume keeps its steps in its own record: none. For the caches' trust (cache/write-trust.ts). Pure.
 */
export function workBefore(c: Pick<Continuation, 'kind' | 'prior' | 'from'>): StepResult[] {
  if (c.kind !== 'fork') return [];
  const at = c.prior.steps.findIndex((s) => s.id === c.from);
  return at < 0 ? [...c.prior.steps] : c.prior.steps.slice(0, at);
}

/**
 * The record a continued run starts with. A resume: its own record, running
 * again, its earlier steps kept (each attempt stays on record) but for those it
 * had skipped, which are still to run. A fork: the new run's record, naming
 * the run it came from.
 */
export function continuedRecord(c: Continuation, fresh: RunRecord, now: Date): RunRecord {
  if (c.kind === 'fork') {
    return { ...fresh, forkOf: { runId: c.prior.runId, step: c.from, commit: c.startAt ?? '' }, attempts: [{ n: 1, startedAt: now.toISOString(), how: 'start', from: c.from, ...(c.by ? { by: c.by } : {}) }] };
  }
  const p = c.prior;
  const earlier = p.attempts?.length ? p.attempts : [{ n: 1, startedAt: p.startedAt, how: 'start' as const }];
  const last = earlier[earlier.length - 1]!;
  const closed = [...earlier.slice(0, -1), { ...last, finishedAt: last.finishedAt ?? p.finishedAt ?? undefined, status: last.status ?? p.status }];
  return {
    ...p,
    status: 'running',
    pid: fresh.pid,
    pipelineFile: fresh.pipelineFile,
    deliveryRules: fresh.deliveryRules,
    finishedAt: null,
    durationMs: null,
    error: null,
    gate: null,
    cleanup: null,
    keptWorkspace: false,
    worktree: null,
    current: null,
    running: [],
    lanes: [],
    steps: p.steps.filter((s) => s.status !== 'skipped'),
    attempts: [...closed, { n: closed.length + 1, startedAt: now.toISOString(), how: c.how === 'approval' ? 'approval' : 'resume', from: c.from, ...(c.by ? { by: c.by } : {}) }],
  };
}
