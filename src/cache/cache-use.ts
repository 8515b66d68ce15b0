/**
 * Who is using a cache now, so that nothing is pruned or removed under a
 * step. Each step that mounts a cache leaves a file in its `users/`
 * (outside what the step sees), named by its run; a run whose process is
 * gone (its owner lock free) uses nothing, and its file is taken away.
 *
 * Pruning and removal hold the cache's kernel lock and look at `users/`
 * while holding it; a step leaves its file first and then waits until the
 * lock is free. So a prune either sees the step, or ends before it starts.
 */
import { randomBytes } from 'node:crypto';
import { readdir, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { tryLock, waitLock } from '../common/kernel-lock.js';
import { removeTree } from '../workspace/remove-tree.js';
import { ensureOwnDir, type CachePaths } from './cache-dirs.js';

const SCOPE = 'cache';

/** Whether the run with this id is alive (its owner lock held). */
export type RunAlive = (runId: string) => Promise<boolean>;

export interface CacheUse {
  /** the use's own name: its file in users/, its layer in scratch/ */
  id: string;
  end(): Promise<void>;
}

export async function beginUse(paths: CachePaths, runId: string, signal?: AbortSignal): Promise<CacheUse> {
  await ensureOwnDir(paths.users);
  const id = `${runId}.${randomBytes(4).toString('hex')}`;
  const file = path.join(paths.users, id);
  await writeFile(file, `${runId}\n`, { mode: 0o600 });
  try {
    // a prune or removal that began before the file was there ends before the step starts
    const held = await waitLock(SCOPE, paths.dir, { pollMs: 100, ...(signal ? { signal } : {}) });
    await held.release();
  } catch (err) {
    await unlink(file).catch(() => undefined);
    throw err;
  }
  return {
    id,
    end: async () => {
      await removeTree(path.join(paths.scratch, id)).catch(() => undefined);
      await unlink(file).catch(() => undefined);
    },
  };
}

/** The runs using the cache now (but the use `except`, the caller's own); files of runs that are gone are taken away, with their layers. */
export async function liveUsers(paths: CachePaths, alive: RunAlive, except?: string): Promise<string[]> {
  const live: string[] = [];
  for (const id of await readdir(paths.users).catch(() => [] as string[])) {
    if (id === except) continue;
    const runId = id.replace(/\.[0-9a-f]+$/, '');
    if (await alive(runId)) live.push(runId);
    else {
      await removeTree(path.join(paths.scratch, id)).catch(() => undefined);
      await unlink(path.join(paths.users, id)).catch(() => undefined);
    }
  }
  return [...new Set(live)];
}

export type Exclusive<T> = { ran: true; value: T } | { ran: false; why: string };

/** Runs `fn` when no step uses the cache (but the use `except`, the caller's own) and nothing else prunes it; else says why not, at once. */
export async function whileUnused<T>(paths: CachePaths, alive: RunAlive, fn: () => Promise<T>, except?: string): Promise<Exclusive<T>> {
  const held = await tryLock(SCOPE, paths.dir);
  if (!held) return { ran: false, why: 'another prune or removal of it is under way' };
  try {
    const live = await liveUsers(paths, alive, except);
    if (live.length) return { ran: false, why: `in use by run ${live.join(', ')}` };
    return { ran: true, value: await fn() };
  } finally {
    await held.release();
  }
}
