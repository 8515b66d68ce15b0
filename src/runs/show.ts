/**
 * A run as its reader sees it, the same for the HTTP API and MCP: its record,
 * or, while a server holds it queued or is starting it (no record of its own
 * yet), what it is doing now; and the list of runs, what the server is doing
 * first. Moved here from api.ts so the two never read runs two ways.
 */
import { RunnerError } from '../common/errors.js';
import { DeliveryRefused } from '../delivery/refusal.js';
import { runListing, type RunRecord } from '../run/record.js';
import { listRuns, readRun } from '../run/records.js';

/** A run a server holds and that has no record of its own yet. */
export interface NotStarted {
  runId: string;
  pipeline: string | null;
  /** starting: taken from the queue, its record not written yet (workspace, images) */
  status: 'queued' | 'starting';
  /** what asked for the run */
  why?: string;
  error: null;
}

export interface HeldRuns {
  /** a run this server holds queued, or is starting (its record not written yet) */
  notStarted(runId: string): NotStarted | undefined;
  /** ids of the runs this server has queued, then of those it has started */
  active(): string[];
}

/** The run's record; while the server holds it queued or is starting it, what it is doing now. run_unknown when neither. */
export async function currentRun(runsDir: string, held: Pick<HeldRuns, 'notStarted'>, id: string): Promise<RunRecord | NotStarted> {
  let rec: RunRecord | undefined;
  try {
    rec = await readRun(runsDir, id);
  } catch (err) {
    if (!(err instanceof RunnerError && err.code === 'run_unknown')) throw err;
  }
  if (rec && rec.status !== 'queued') return rec;
  const pending = held.notStarted(id);
  if (pending) return pending;
  if (rec) return rec;
  throw new RunnerError('run_unknown', `no run ${id} in ${runsDir}`);
}

/** Run summaries: what the server is doing first, whenever it was asked for; then the other records, newest first. */
export async function currentRuns(
  runsDir: string,
  held: HeldRuns,
  opts: { pipeline?: string | null; status?: string | null; limit?: number } = {},
): Promise<Array<Record<string, unknown> | NotStarted>> {
  const where = (r: { pipeline: string | null; status: string }) => (!opts.pipeline || r.pipeline === opts.pipeline) && (!opts.status || r.status === opts.status);
  const active = held.active();
  const activeIds = new Set(active);
  const current = await Promise.all(active.map((id) => currentRun(runsDir, held, id).catch(() => undefined))); // an unreadable record is left out, as listRuns does
  const records = await listRuns(runsDir, { where: (r) => !activeIds.has(r.runId) && where(r), ...(opts.limit !== undefined ? { limit: opts.limit } : {}) });
  const all = [...current.filter((r): r is RunRecord | NotStarted => r !== undefined && where(r)), ...records].map((r) => ('steps' in r ? runListing(r) : r));
  return opts.limit === undefined ? all : all.slice(0, opts.limit);
}

/** A run a server holds queued or is starting has no record of its own yet: nothing to deliver. */
export async function checkHeldHere(runsDir: string, held: Pick<HeldRuns, 'notStarted'>, id: string): Promise<void> {
  const r = await currentRun(runsDir, held, id);
  if (!('steps' in r)) throw new DeliveryRefused('not_deliverable', `run ${id} is ${r.status} on this server and has not run yet: wait for it to end`);
}
