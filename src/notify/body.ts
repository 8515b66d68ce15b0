/**
 * What a notification says about a run that ended or waits at a gate: its
 * status as `on:` names it (a failed run stopped by its budget or a step's
 * timeout is `budget_exhausted` or `timed_out`), and the body sent, as the
 * runner's JSON or a Slack-compatible `{ text }`; a gate's body also says
 * which step waits, its prompt, its deadline and how to decide. Pure.
 */
import { runCost, type RunRecord } from '../run/record.js';
import type { NotifyEntry, NotifyStatus } from './schema.js';

/**
 * The record's outcome as a notify status; undefined for a run that has not
 * ended (queued, running, waiting at a gate: a gate is told by its own
 * notifyRunEvent, with the gate's step and prompt) or never started.
 */
export function notifyStatus(r: Pick<RunRecord, 'status' | 'steps'>): NotifyStatus | undefined {
  const status = r.status;
  switch (status) {
    case 'succeeded':
    case 'canceled':
    case 'error':
    case 'interrupted':
    case 'rejected':
      return status;
    case 'failed':
      if (r.steps.some((s) => s.status === 'budget_exhausted')) return 'budget_exhausted';
      if (r.steps.some((s) => s.status === 'timed_out')) return 'timed_out';
      return 'failed';
    default:
      return undefined;
  }
}

/** Whether an entry fires for a status: its `on:` names it, or names `failed` and the run failed by budget or timeout. */
export function entryFires(entry: Pick<NotifyEntry, 'on'>, status: NotifyStatus): boolean {
  return entry.on.includes(status) || ((status === 'budget_exhausted' || status === 'timed_out') && entry.on.includes('failed'));
}

/** What the runner knows of a gate when it tells of it (the run waits at `step`, or `step` ended it). */
export interface GateInfo {
  /** the approval step's id */
  step: string;
  /** its `approval: prompt:`, what the person is asked to check */
  prompt: string;
  /** when the gate's timeout ends the run rejected (a Date or ISO 8601), when it has one */
  deadline?: Date | string | null;
  /** how to approve from where the run's home is (e.g. with its --home); `runner approve RUN` when absent */
  approveHint?: string;
}

/** A gate as the body says it: the step, its prompt, the deadline, and how to decide through the CLI or the API. */
export interface GateBody {
  step: string;
  prompt: string;
  /** ISO 8601, or null for a gate without a timeout */
  deadline: string | null;
  approve: { command: string; api: string };
  reject: { command: string; api: string };
}

export interface NotifyBody {
  runId: string;
  pipeline: string;
  project: string;
  status: NotifyStatus;
  /** the run's record status (failed for budget_exhausted and timed_out) */
  runStatus: RunRecord['status'];
  branch: string | null;
  /** what the run's agent steps reported spending, when any did */
  costUsd: number | null;
  /** the run's page on the dashboard, a path on the runner serve that holds the home */
  link: string;
  /** when the notification was made (ISO 8601) */
  at: string;
  /** why it did not succeed, when the record says */
  error: { code: string; message: string } | null;
  /** the gate the run waits at (awaiting_approval) or that ended it (rejected), when the runner says; null otherwise */
  gate: GateBody | null;
}

export function gateBody(runId: string, g: GateInfo): GateBody {
  const run = encodeURIComponent(runId);
  const when = g.deadline == null ? undefined : new Date(g.deadline);
  // a deadline that is not a time is said as given, not dropped (nor thrown on)
  const deadline = when === undefined ? null : Number.isNaN(when.getTime()) ? String(g.deadline) : when.toISOString();
  return {
    step: g.step,
    prompt: g.prompt,
    deadline,
    approve: { command: g.approveHint ?? `runner approve ${runId}`, api: `POST /api/runs/${run}/approve` },
    reject: { command: `runner reject ${runId}`, api: `POST /api/runs/${run}/reject` },
  };
}

export function notifyBody(r: RunRecord, status: NotifyStatus, now: Date, gate?: GateInfo): NotifyBody {
  return {
    runId: r.runId,
    pipeline: r.pipeline,
    project: r.project,
    status,
    runStatus: r.status,
    branch: r.branch,
    costUsd: runCost(r).costUsd,
    link: `/runs/${encodeURIComponent(r.runId)}`,
    at: now.toISOString(),
    error: r.error,
    gate: gate ? gateBody(r.runId, gate) : null,
  };
}

/** The bytes POSTed for an entry: the JSON body, or for `format: slack` one line of text. */
export function renderBody(body: NotifyBody, format: NotifyEntry['format']): string {
  if (format !== 'slack') return JSON.stringify(body);
  const cost = body.costUsd !== null ? `, $${body.costUsd.toFixed(2)}` : '';
  const branch = body.branch ? ` on ${body.branch}` : '';
  const why = body.error ? `: ${firstLine(body.error.message)}` : '';
  const g = body.gate;
  const at = g ? ` at ${g.step}` : '';
  const decide =
    g && body.status === 'awaiting_approval'
      ? `: ${firstLine(g.prompt)} Approve: ${g.approve.command} (or ${g.approve.api}); reject: ${g.reject.command}${g.deadline ? `; by ${g.deadline}, else it ends rejected` : ''}`
      : '';
  return JSON.stringify({ text: `runner: ${body.pipeline} run ${body.runId} ${body.status.replaceAll('_', ' ')}${at}${branch}${cost} (${body.link})${why}${decide}` });
}

function firstLine(text: string): string {
  return text.split('\n')[0]!.slice(0, 300);
}
