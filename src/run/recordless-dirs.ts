/**
 * Run directories without their record (`runs/<id>/` and no run.json): what
 * a runner killed between making a run's directory and writing its record
 * leaves (runner exec, or runner serve accepting a trigger). Nothing lists
 * them, so recovery removes them, unless a live process owns the run: every
 * maker of a run directory holds the run's owner lock from before the
 * directory exists until its record is written.
 */
import { lstat, readdir } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../common/errors.js';
import { safeName } from '../workspace/names.js';
import { removeTree } from '../workspace/remove-tree.js';
import { tryOwnerLock } from './owner-lock.js';

const hasRecord = (dir: string) => lstat(path.join(dir, 'run.json')).then(
  () => true,
  (err: NodeJS.ErrnoException) => err.code !== 'ENOENT',
);

/** Removes every run directory of the home without a record whose owner is gone; returns how many went. */
export async function removeRecordlessDirs(homeRoot: string, runsRoot: string, say: (message: string) => void): Promise<number> {
  let removed = 0;
  for (const name of await readdir(runsRoot).catch(() => [] as string[])) {
    if (name.startsWith('.') || !isRunId(name)) continue;
    const dir = path.join(runsRoot, name);
    if (!(await lstat(dir).catch(() => undefined))?.isDirectory() || (await hasRecord(dir))) continue;
    const held = await tryOwnerLock(homeRoot, name);
    if (!held) continue; // being made right now
    try {
      // its maker may have written the record and let go since the look above
      if (await hasRecord(dir)) continue;
      await removeTree(dir);
      removed++;
    } catch (err) {
      say(`could not remove ${dir}, a run directory without a record: ${errorMessage(err)}`);
    } finally {
      await held.release();
    }
  }
  if (removed) say(`removed ${removed} run director${removed === 1 ? 'y' : 'ies'} without a record (left by a runner that stopped before writing it)`);
  return removed;
}

function isRunId(name: string): boolean {
  try {
    return safeName(name, 'run id') === name;
  } catch {
    return false;
  }
}
