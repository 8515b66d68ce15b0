/** Reading run records from the runner home: one, or all of them. */
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import { writeFileAtomic } from '../common/atomic-write.js';
import { safeName } from '../workspace/names.js';
import type { RunRecord } from './record.js';

export function runDir(runsRoot: string, runId: string): string {
  if (safeName(runId, 'run id') !== runId) throw new RunnerError('unsafe_name', `run id ${JSON.stringify(runId)} is not a run id`);
  return path.join(runsRoot, runId);
}

export async function readRun(runsRoot: string, runId: string): Promise<RunRecord> {
  const file = path.join(runDir(runsRoot, runId), 'run.json');
  try {
    return JSON.parse(await readFile(file, 'utf8')) as RunRecord;
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new RunnerError(
      code === 'ENOENT' ? 'run_unknown' : 'run_unreadable',
      code === 'ENOENT' ? `no run ${runId} in ${runsRoot} (runner runs ls)` : `the record of run ${runId} cannot be read: ${(err as Error).message}`,
    );
  }
}

export async function writeRun(runsRoot: string, record: RunRecord): Promise<void> {
  await writeFileAtomic(path.join(runDir(runsRoot, record.runId), 'run.json'), JSON.stringify(record, null, 2) + '\n');
}

/**
 * Readable run records, newest first; unreadable ones are skipped. With a
 * limit, only as many records are read as it takes to find that many that
 * match (run ids begin with their UTC time, so the newest ids are read first).
 */
export async function listRuns(runsRoot: string, opts: { limit?: number; where?: (r: RunRecord) => boolean; sinceId?: string } = {}): Promise<RunRecord[]> {
  // sinceId: only runs whose id sorts at or after it (ids begin with when the run was asked for, UTC), never read the rest
  const ids = (await readdir(runsRoot).catch(() => [] as string[]))
    .filter((n) => !n.startsWith('.') && (opts.sinceId === undefined || n >= opts.sinceId))
    .sort()
    .reverse();
  const read = (id: string) =>
    readFile(path.join(runsRoot, id, 'run.json'), 'utf8')
      .then((t) => JSON.parse(t) as RunRecord)
      .catch(() => undefined);
  const found: RunRecord[] = [];
  const batch = opts.limit === undefined ? ids.length : Math.max(32, opts.limit);
  for (let i = 0; i < ids.length && (opts.limit === undefined || found.length < opts.limit); i += batch) {
    for (const r of await Promise.all(ids.slice(i, i + batch).map(read))) if (r && (!opts.where || opts.where(r))) found.push(r);
  }
  // Newest first by the second in the id (when the run was asked for: the order records are read in, so a limit
  // never skips one), then by start time (two runs in one second), then by id.
  const second = (id: string) => id.slice(0, 15);
  found.sort((a, b) => second(b.runId).localeCompare(second(a.runId)) || b.startedAt.localeCompare(a.startedAt) || b.runId.localeCompare(a.runId));
  return opts.limit === undefined ? found : found.slice(0, opts.limit);
}
