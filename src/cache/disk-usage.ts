/**
 * A cache's size, and pruning it, with GNU find: it walks by directory
 * descriptors (no depth or PATH_MAX limit), never follows a symlink (-P),
 * stays on one filesystem (-xdev), and deletes relative to the directory it
 * is in. A symlink a step planted counts as its own few bytes and goes as
 * itself; what it points to is never read. The output is read as a stream:
 * memory stays bounded however many files a step left.
 *
 * Called only while no step uses the cache (cache-use.ts): nothing can
 * swap a directory for a symlink while the walk is in it.
 */
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { AgeHistogram, bytesToFree, parseEntry } from './prune-plan.js';

const ENV = { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' };

/** Runs find with `args` after the directory, each output line to `onLine`. Errors on some entries (unreadable) pass: what it saw counts. */
function find(dir: string, args: string[], onLine?: (line: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('find', ['-P', dir, '-xdev', ...args], { env: ENV, stdio: ['ignore', onLine ? 'pipe' : 'ignore', 'ignore'] });
    child.on('error', reject);
    if (onLine) createInterface({ input: child.stdout! }).on('line', onLine);
    child.on('close', () => resolve());
  });
}

export interface Usage {
  bytes: number;
  entries: number;
  oldest: number;
  newest: number;
}

/** Bytes on disk (as du counts them) of everything under `dir`, the directory itself included. */
export async function diskUsage(dir: string): Promise<Usage> {
  const u: Usage = { bytes: 0, entries: 0, oldest: Infinity, newest: -Infinity };
  await find(dir, ['-printf', '%T@ %b\\n'], (line) => {
    const e = parseEntry(line);
    if (!e) return;
    u.bytes += e.bytes;
    u.entries++;
    u.oldest = Math.min(u.oldest, e.mtime);
    u.newest = Math.max(u.newest, e.mtime);
  });
  return u;
}

/** how far ahead of the clock an entry's time may be (clocks of containers and the host agree; a filesystem's times are coarse) */
const FUTURE_SLACK_S = 60;

export interface PruneReport {
  before: number;
  after: number;
  /** the entries written at or before this time (seconds) went; undefined when nothing had to */
  cutoff?: number;
}

/** Brings `dir` under `max` bytes, oldest-written entries first (prune-plan.ts); empty directories go with them. */
export async function pruneToBound(dir: string, max: number, now = Date.now()): Promise<PruneReport> {
  let u = await diskUsage(dir);
  const before = u.bytes;
  let free = bytesToFree(u.bytes, max);
  if (free === 0) return { before, after: u.bytes };
  // Entries dated ahead of now (a step set their times: a tool writes an entry when it fetches it) go first, or
  // they would outlive every honest entry, prune after prune.
  if (u.newest > now / 1000 + FUTURE_SLACK_S) {
    await find(dir, ['-mindepth', '1', '!', '-type', 'd', '-newermt', `@${Math.floor(now / 1000 + FUTURE_SLACK_S)}`, '-delete']);
    u = await diskUsage(dir);
    free = bytesToFree(u.bytes, max);
    if (free === 0) return { before, after: u.bytes };
  }
  const ages = new AgeHistogram(u.oldest, u.newest);
  // only what is not a directory is pruned by age: a directory's time changes whenever an entry in it comes or goes
  await find(dir, ['-mindepth', '1', '!', '-type', 'd', '-printf', '%T@ %b\\n'], (line) => {
    const e = parseEntry(line);
    if (e) ages.add(e.mtime, e.bytes);
  });
  const cutoff = ages.cutoff(free);
  // find's -newermt takes a time as @seconds; ! -newermt is "at or before". A double holds a time to about a
  // microsecond: the cutoff is rounded up to one, and when everything must go, no time is compared at all.
  const age = cutoff >= ages.newest ? [] : ['!', '-newermt', `@${(Math.ceil(cutoff * 1e6) / 1e6).toFixed(6)}`];
  await find(dir, ['-mindepth', '1', '!', '-type', 'd', ...age, '-delete']);
  await find(dir, ['-mindepth', '1', '-depth', '-type', 'd', '-empty', '-delete']);
  const after = await diskUsage(dir);
  return { before, after: after.bytes, cutoff };
}
