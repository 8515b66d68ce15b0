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

/** Every readable run record, newest first; unreadable ones are skipped. */
export async function listRuns(runsRoot: string): Promise<RunRecord[]> {
  const ids = (await readdir(runsRoot).catch(() => [] as string[])).filter((n) => !n.startsWith('.'));
  const records = await Promise.all(
    ids.map((id) =>
      readFile(path.join(runsRoot, id, 'run.json'), 'utf8')
        .then((t) => JSON.parse(t) as RunRecord)
        .catch(() => undefined),
    ),
  );
  // Newest first by start time (ms), then by id: two runs can start within one second.
  return records
    .filter((r): r is RunRecord => r !== undefined)
    .sort((a, b) => b.startedAt.localeCompare(a.startedAt) || b.runId.localeCompare(a.runId));
}
