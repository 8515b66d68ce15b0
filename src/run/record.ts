/** The run record written to `runs/<runId>/run.json`. */
import type { FlowStop, RouteTaken } from '../flow/planner.js';
import type { WorkspaceKind } from '../workspace/workspace.js';
import type { GateDecision, GateWait } from './gate.js';
import { resultName, type StepResult } from './step-result.js';

/**
 * queued: accepted by runner serve, waiting to start; not_started: it never did (its error says why);
 * awaiting_approval: stopped at a gate, holding nothing, until a person decides (gate.ts); rejected: a person
 * (or the gate's timeout) said no
 */
export type RunStatus = 'queued' | 'not_started' | 'running' | 'awaiting_approval' | 'succeeded' | 'failed' | 'canceled' | 'rejected' | 'error' | 'interrupted';

export interface RunRecord {
  runId: string;
  pipeline: string;
  pipelineFile: string;
  /** the values the run was started with, defaults filled in (absent in records of older runners) */
  inputs?: Record<string, string>;
  project: string;
  workspace: WorkspaceKind;
  taskId: string | null;
  /** the directory steps worked in */
  worktree: string | null;
  /** null for a persistent directory */
  branch: string | null;
  baseSha: string | null;
  headSha: string | null;
  status: RunStatus;
  /** when it started; for a queued or not_started run, when it was asked for */
  startedAt: string;
  /** what asked for it, for runs runner serve accepted: its schedule, a catch-up, a trigger */
  requestedBy?: 'schedule' | 'catchup' | 'trigger';
  /** what started it, structured (absent in records of older runners, and of runs started some other way) */
  startedBy?: StartedBy;
  finishedAt: string | null;
  durationMs: number | null;
  pushed: boolean;
  push: { remote?: string; reason?: string; error?: string; hint?: string } | null;
  keptWorkspace: boolean;
  pid: number;
  /** the step running now (cleared when it ends): what recovery marks interrupted; the first of `running` */
  current: { id: string; startedAt: string } | null;
  /** every step running now (steps run at once): recovery commits each lane's leftovers on its branch */
  running?: RunningStep[];
  /** lanes open now (worktrees of steps that run at once): recovery commits their leftovers and removes them */
  lanes?: Array<{ key: string; worktree: string; branch: string; recovery: NonNullable<RunRecord['recovery']>; removing?: boolean }>;
  /**
   * Written with the run's final status, before anything is cleaned up, and
   * cleared once cleanup is done: what cleanup does with the workspace (`remove`:
   * given back to the pool or removed). A runner that dies in between is
   * recovered by finishing that cleanup, never by committing what it was taking apart.
   */
  cleanup?: RunCleanup | null;
  /** flow: the routes taken, what stopped the run, the lane branches kept for the user */
  flow?: { routes: RouteTaken[]; stop: FlowStop | null; keptBranches: string[] };
  /** git kinds: what recovery needs to commit leftovers without trusting the worktree */
  recovery: { gitDir: string; links: { dotGit: string; gitdir: string; commondir: string }; dirId: { dev: number; ino: number } } | null;
  /** what delivery checks, fixed at run time: the steps marked verify, the allowed paths */
  deliveryRules: { verifySteps: string[]; paths: string[] | null };
  /** whether the run's work was brought into the project (runner apply / merge) */
  delivered: { how: 'apply' | 'merge'; at: string; into?: string; commit?: string } | null;
  /** every attempt to deliver it, done or refused, oldest first (absent until the first) */
  deliveries?: DeliveryAttempt[];
  hooks: Array<{ name: string; ok: boolean; exitCode: number | null; timedOut: boolean; durationMs: number; outputCut: boolean }>;
  steps: StepResult[];
  error: { code: string; message: string } | null;
  /** the gate the run waits at (status awaiting_approval); null once decided */
  gate?: GateWait | null;
  /** every decision taken at its gates, oldest first */
  decisions?: GateDecision[];
  /** each time the run was started or continued (resume, an approval), oldest first; absent for a run started once */
  attempts?: RunAttempt[];
  /** a fork: the run and step it was forked from, and the commit its branch began at */
  forkOf?: { runId: string; step: string; commit: string };
  /** the pipeline file as the run first read it, kept in the run's directory (resume compares the file with it) */
  pipelineCopy?: string;
}

/** One start of a run: the first, then each resume or approval that continued it. */
export interface RunAttempt {
  n: number;
  startedAt: string;
  finishedAt?: string;
  status?: RunStatus;
  how: 'start' | 'resume' | 'approval';
  /** the step it began at (a continuation) */
  from?: string;
  by?: DeliveredBy;
}

/** What started a run: its schedule, a person through the API or the dashboard, `runner exec`, an agent through MCP (`runner mcp`, serve's /mcp), or a rerun of another run. */
export interface StartedBy {
  via: 'schedule' | 'api' | 'dashboard' | 'cli' | 'rerun' | 'mcp';
  /** the run this one runs again */
  rerunOf?: string;
  /** the schedule entry's cron */
  schedule?: string;
  /** the client's address (API, dashboard) */
  from?: string;
  /** the OS user (cli) */
  user?: string;
}

/** Who asked for a delivery. */
export interface DeliveredBy {
  via: 'cli' | 'api' | 'dashboard' | 'mcp';
  /** the OS user (cli) */
  user?: string;
  /** the client's address (API, dashboard) */
  from?: string;
}

/** One attempt to deliver a run: what was asked, by whom, and what came of it. */
export interface DeliveryAttempt {
  action: 'merge' | 'apply';
  at: string;
  by: DeliveredBy;
  into?: string;
  squash?: boolean;
  /** the merge's commit */
  commit?: string;
  ok: boolean;
  /** the refusal's reason (DeliveryRefused), when it was refused */
  refused?: string;
  /** why it was refused or failed */
  message?: string;
}

export interface RunCleanup {
  /** when the outcome was decided */
  since: string;
  workspace: 'remove' | 'keep' | 'none';
}

export interface RunningStep {
  id: string;
  /** `implement#2`, `build[0]` */
  name: string;
  startedAt: string;
  /** the sandbox it runs in, kept on the step recovery marks interrupted */
  isolation?: StepResult['isolation'];
  /** an agent step's profile, kept on the step recovery marks interrupted: its leftovers go on the run's branch, and a resume's later steps are then steps after an agent's (cache/write-trust.ts) */
  agent?: string;
  /** a lane's worktree, for recovery */
  lane?: { worktree: string; branch: string; recovery: NonNullable<RunRecord['recovery']> };
}

/** A record with what is known when a run is asked for or starts; the rest empty, as a run that did nothing yet. */
export function newRecord(
  f: Pick<RunRecord, 'runId' | 'pipeline' | 'pipelineFile' | 'project' | 'workspace' | 'status' | 'startedAt' | 'pid'> & Partial<RunRecord>,
): RunRecord {
  return {
    taskId: null,
    worktree: null,
    branch: null,
    baseSha: null,
    headSha: null,
    finishedAt: null,
    durationMs: null,
    pushed: false,
    push: null,
    keptWorkspace: false,
    current: null,
    recovery: null,
    deliveryRules: { verifySteps: [], paths: null },
    delivered: null,
    hooks: [],
    steps: [],
    error: null,
    ...f,
  };
}

/** The `--json` summary: the record's essentials, each step by id (its latest run), every run of a step in order, the flow. */
export function summarize(r: RunRecord): Record<string, unknown> {
  const brief = (s: StepResult) => ({
    status: s.status,
    exitCode: s.exitCode,
    durationMs: s.durationMs,
    commit: s.commit,
    ...(s.changes ? { changes: s.changes } : {}),
    ...(s.usage ? { usage: s.usage } : {}),
    ...(s.egress ? { egress: s.egress } : {}),
    ...(s.outputs.result !== undefined ? { result: s.outputs.result } : {}),
    ...(s.message ? { message: s.message } : {}),
    ...(s.base ? { base: s.base } : {}),
  });
  // Each step's runs, once: its latest run, or a for_each step's instances (each as its latest run).
  const byId = new Map<string, StepResult[]>();
  for (const s of r.steps) byId.set(s.id, [...(byId.get(s.id) ?? []), s]);
  const steps: Record<string, unknown> = {};
  for (const [id, runs] of byId) {
    const last = runs[runs.length - 1]!;
    if (!last.item) {
      steps[id] = { ...brief(last), attempts: runs.length };
      continue;
    }
    const latest = new Map<number, StepResult>();
    for (const x of runs) if (x.item) latest.set(x.item.index, x);
    const instances = [...latest.values()].sort((a, b) => a.item!.index - b.item!.index);
    steps[id] = {
      status: instances.find((x) => x.status !== 'completed')?.status ?? 'completed',
      attempts: runs.length,
      instances: instances.map((x) => ({ item: x.item!.value, ...brief(x) })),
    };
  }
  return {
    runId: r.runId,
    status: r.status,
    workspace: r.workspace,
    taskId: r.taskId,
    branch: r.branch,
    baseSha: r.baseSha,
    headSha: r.headSha,
    pushed: r.pushed,
    worktree: r.keptWorkspace ? r.worktree : null,
    error: r.error,
    steps,
    attempts: r.steps
      .filter((s) => s.status !== 'skipped')
      .map((s) => ({
        name: resultName(s),
        id: s.id,
        attempt: s.attempt ?? 1,
        ...(s.item ? { item: s.item.value } : {}),
        status: s.status,
        startedAt: s.startedAt ?? null,
        finishedAt: s.finishedAt ?? null,
        durationMs: s.durationMs,
        commit: s.commit,
        ...(s.lane ? { lane: s.lane } : {}),
        ...(s.retryInMs !== undefined ? { retryInMs: s.retryInMs } : {}),
      })),
    flow: r.flow ?? { routes: [], stop: null, keptBranches: [] },
    ...(r.gate ? { gate: r.gate } : {}),
    ...(r.decisions?.length ? { decisions: r.decisions } : {}),
    ...(r.attempts?.length ? { runAttempts: r.attempts } : {}),
    ...(r.forkOf ? { forkOf: r.forkOf } : {}),
  };
}

/** A run as lists show it (runs ls --json, GET /api/runs): its essentials, the step running now and each step's status, never their outputs or changes. */
export function runListing(r: RunRecord): Record<string, unknown> {
  return {
    runId: r.runId,
    pipeline: r.pipeline,
    status: r.status,
    project: r.project,
    workspace: r.workspace,
    taskId: r.taskId,
    branch: r.branch,
    startedAt: r.startedAt,
    finishedAt: r.finishedAt,
    durationMs: r.durationMs,
    current: r.current,
    error: r.error,
    ...(r.startedBy ? { startedBy: r.startedBy } : {}),
    ...(r.gate ? { gate: r.gate } : {}),
    ...(r.forkOf ? { forkOf: r.forkOf } : {}),
    ...runCost(r),
    steps: r.steps.map((s) => ({ id: s.id, name: resultName(s), status: s.status, exitCode: s.exitCode, durationMs: s.durationMs })),
  };
}

/**
 * What a run's agent steps used, summed: costUsd null when no step reported a
 * cost, tokens null when no step reported usage (a run without agent steps). Pure.
 */
export function runCost(r: Pick<RunRecord, 'steps'>): { costUsd: number | null; tokens: { input: number; output: number } | null } {
  let costUsd: number | null = null;
  let tokens: { input: number; output: number } | null = null;
  for (const s of r.steps) {
    if (!s.usage || s.carried) continue; // a fork's carried steps were paid for by the run they came from
    tokens ??= { input: 0, output: 0 };
    tokens.input += s.usage.inputTokens ?? 0;
    tokens.output += s.usage.outputTokens ?? 0;
    if (s.usage.costUsd !== null) costUsd = (costUsd ?? 0) + s.usage.costUsd;
  }
  return { costUsd, tokens };
}
