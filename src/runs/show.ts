/**
 * Show a run: its record, or, while the door holds it queued or is starting
 * it (no record of its own yet), what it is doing now. The same for the CLI,
 * the HTTP API and MCP, with the checks every operation on a run starts with:
 * the id is a run id (records.ts), the run is known, and its project is one
 * the door serves (scope.ts).
 */
import { RunnerError } from '../common/errors.js';
import { DeliveryRefused } from '../delivery/refusal.js';
import type { RunRecord } from '../run/record.js';
import { readRun, runDir } from '../run/records.js';
import type { Door } from './door.js';
import { planOf, type RunPlan } from './plan-view.js';
import { checkServed } from './scope.js';

/** A run a server holds and that has no record of its own yet. */
export interface NotStarted {
  runId: string;
  pipeline: string | null;
  /** starting: taken from the queue, its record not written yet (workspace, images) */
  status: 'queued' | 'starting';
  /** what asked for the run */
  why?: string;
  error: null;
  /** a resume being started: how many starts the run's record had when it was asked for */
  continues?: number;
}

export interface HeldRuns {
  /** a run this server holds queued, or is starting (its record not written yet) */
  notStarted(runId: string): NotStarted | undefined;
  /** ids of the runs this server has queued, then of those it has started */
  active(): string[];
}

/** The run's record; while the door holds it queued or is starting it, what it is doing now. run_unknown when neither. No scope check: showRun's. */
export async function currentRun(runsDir: string, held: Pick<HeldRuns, 'notStarted'>, id: string): Promise<RunRecord | NotStarted> {
  let rec: RunRecord | undefined;
  try {
    rec = await readRun(runsDir, id);
  } catch (err) {
    if (!(err instanceof RunnerError && err.code === 'run_unknown')) throw err;
  }
  if (rec && rec.status !== 'queued') {
    // a run the door is continuing (a resume, an approved gate) whose record still says how its last start ended: starting again
    // (once its record counts the new start, the record is what it is: one that ended since is not shown starting)
    const again = rec.status !== 'running' ? held.notStarted(id) : undefined;
    return again?.continues !== undefined && (rec.attempts?.length ?? 1) === again.continues ? again : rec;
  }
  const pending = held.notStarted(id);
  if (pending) return pending;
  if (rec) return rec;
  throw new RunnerError('run_unknown', `no run ${id} in ${runsDir}`);
}

/** The run as the door may show it: unsafe_name, run_unknown, or outside_scope when its project is not the door's. */
export async function showRun(door: Door, id: string): Promise<RunRecord | NotStarted> {
  const r = await currentRun(door.runsDir, door, id);
  if ('steps' in r) await checkServed(door.scope, r); // a run the door holds itself is its own
  return r;
}

/** A run as a reader is shown it: showRun's answer with its plan, every step of its pipeline with where it stands (plan-view.ts). */
export type RunView = (RunRecord | NotStarted) & { plan: RunPlan };

/**
 * The run as showRun gives it, with its plan: for the doors that show a run
 * to a person or an agent (GET /api/runs/:id and the dashboard), not for the
 * operations that only check a run first (they would read its pipeline file for nothing).
 * A run the door still holds has its queued record on disk, which names its file.
 */
export async function runView(door: Door, id: string): Promise<RunView> {
  const r = await showRun(door, id);
  if ('steps' in r) return { ...r, plan: await planOf(r, runDir(door.runsDir, id)) };
  const queued = await readRun(door.runsDir, id).catch(() => undefined);
  const plan = queued ? await planOf({ ...queued, status: r.status }, runDir(door.runsDir, id)) : { from: 'record' as const, file: '', note: 'the run has no record yet: its steps are listed once it has one', steps: [] };
  return { ...r, plan };
}

/** The run's own record (it has started, or ended), for an operation that needs one: a run the door still holds is refused, as not delivered yet. */
export async function ranRecord(door: Door, id: string): Promise<RunRecord> {
  const r = await showRun(door, id);
  if (!('steps' in r)) throw new DeliveryRefused('not_deliverable', `run ${id} is ${r.status} on this server${r.status === 'queued' ? ' and has not run yet' : ''}: wait for it to end`);
  return r;
}

/** The run's record as it is on disk (queued, running or ended), checked as showRun checks it: for a reader of whole records (runner runs show). */
export async function showRecord(door: Door, id: string): Promise<RunRecord> {
  const rec = await readRun(door.runsDir, id);
  await checkServed(door.scope, rec);
  return rec;
}
