/**
 * List runs: what the door is doing first (its queued and starting runs,
 * whenever they were asked for), then the other records, newest first; only
 * runs of the projects the door serves (scope.ts), filtered before the limit.
 */
import { runListing, type RunRecord } from '../run/record.js';
import { listRuns } from '../run/records.js';
import type { Door } from './door.js';
import { servedBy } from './scope.js';
import { currentRun, type NotStarted } from './show.js';

export interface RunFilter {
  pipeline?: string | null;
  status?: string | null;
  limit?: number;
}

/** Run summaries (runListing), or whole records with `whole`. */
export async function listRunsOf(door: Door, opts: RunFilter & { whole?: false }): Promise<Array<Record<string, unknown> | NotStarted>>;
export async function listRunsOf(door: Door, opts: RunFilter & { whole: true }): Promise<Array<RunRecord | NotStarted>>;
export async function listRunsOf(door: Door, opts: RunFilter & { whole?: boolean } = {}): Promise<Array<Record<string, unknown> | RunRecord | NotStarted>> {
  const where = (r: { pipeline: string | null; status: string }) => (!opts.pipeline || r.pipeline === opts.pipeline) && (!opts.status || r.status === opts.status);
  const served = await servedBy(door.scope);
  const active = door.active();
  const activeIds = new Set(active);
  const current = await Promise.all(active.map((id) => currentRun(door.runsDir, door, id).catch(() => undefined))); // an unreadable record is left out, as listRuns does
  // The scope needs each record's project's real path (a promise): every record matching the filter is read, then the served ones kept.
  const candidates = await listRuns(door.runsDir, { where: (r) => !activeIds.has(r.runId) && where(r), ...(door.scope.every && opts.limit !== undefined ? { limit: opts.limit } : {}) });
  const records: RunRecord[] = [];
  for (const r of candidates) {
    if (opts.limit !== undefined && records.length >= opts.limit) break;
    if (await served(r.project)) records.push(r);
  }
  const mine = current.filter((r): r is RunRecord | NotStarted => r !== undefined && where(r));
  const all = [...mine, ...records].map((r) => (opts.whole || !('steps' in r) ? r : runListing(r)));
  return opts.limit === undefined ? all : all.slice(0, opts.limit);
}
