/**
 * What a notification says about a run that ended: its status as `on:` names
 * it (a failed run stopped by its budget or a step's timeout is
 * `budget_exhausted` or `timed_out`), and the body sent, as the runner's JSON or
 * a Slack-compatible `{ text }`. Pure.
 */
import { runCost, type RunRecord } from '../run/record.js';
import type { NotifyEntry, NotifyStatus } from './schema.js';

/** The record's outcome as a notify status; undefined for a run that has not ended (queued, running) or never started. */
export function notifyStatus(r: Pick<RunRecord, 'status' | 'steps'>): NotifyStatus | undefined {
  switch (r.status) {
    case 'succeeded':
    case 'canceled':
    case 'error':
    case 'interrupted':
      return r.status;
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
}

export function notifyBody(r: RunRecord, status: NotifyStatus, now: Date): NotifyBody {
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
  };
}

/** The bytes POSTed for an entry: the JSON body, or for `format: slack` one line of text. */
export function renderBody(body: NotifyBody, format: NotifyEntry['format']): string {
  if (format !== 'slack') return JSON.stringify(body);
  const cost = body.costUsd !== null ? `, $${body.costUsd.toFixed(2)}` : '';
  const branch = body.branch ? ` on ${body.branch}` : '';
  const why = body.error ? `: ${body.error.message.split('\n')[0]!.slice(0, 300)}` : '';
  return JSON.stringify({ text: `runner: ${body.pipeline} run ${body.runId} ${body.status.replaceAll('_', ' ')}${branch}${cost} (${body.link})${why}` });
}
