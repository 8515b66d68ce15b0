/**
 * A step's caches, from before its container is made to after it ended:
 * each one's directory for this project, handed to the step's user, marked
 * in use, mounted (read-write, or read-only through a throw-away overlay
 * layer), and after the step pruned back under its bound.
 */
import { chown, lstat, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { formatSize } from '../common/durations.js';
import { errorMessage } from '../common/errors.js';
import type { Mount } from '../container/runtime.js';
import type { CachePlan } from '../plan/cache-plan.js';
import { cacheEnv } from '../plan/cache-plan.js';
import { handOver } from '../workspace/ownership.js';
import { cachePaths, ensureOwnDir, projectCacheDir, readMeta, writeMeta, type CachePaths } from './cache-dirs.js';
import { waitLock } from '../common/kernel-lock.js';
import { beginUse, whileUnused, type CacheUse, type RunAlive } from './cache-use.js';

/** the lock under which a cache's owner is settled and a step's use of it put on record */
const OWNER_SCOPE = 'cache-owner';
import { pruneToBound } from './disk-usage.js';

export interface StepCaches {
  mounts: Mount[];
  env: Record<string, string>;
  /** lines for the step's log: a cache the step may not write, one that was pruned */
  notes: string[];
  /** After the step: its uses end, and a cache it wrote is pruned back under its bound (when no other step uses it). */
  close(): Promise<string[]>;
}

export interface OpenCaches {
  home: string;
  /** the project's directory: its real path names its caches */
  project: string;
  caches: readonly CachePlan[];
  runId: string;
  user: { uid: number; gid: number };
  alive: RunAlive;
  signal?: AbortSignal;
  now: () => Date;
}

const isRoot = () => process.getuid?.() === 0;

export async function openStepCaches(o: OpenCaches): Promise<StepCaches> {
  const opened: Array<{ plan: CachePlan; paths: CachePaths; use: CacheUse; real: string; layered: boolean }> = [];
  const mounts: Mount[] = [];
  const notes: string[] = [];
  try {
    const { dir, real } = await projectCacheDir(o.home, o.project);
    for (const plan of o.caches) {
      const paths = cachePaths(dir, plan.name);
      await ensureOwnDir(paths.dir);
      await mkdir(paths.data, { mode: 0o755 }).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      // Who owns the cache is settled one step at a time, before the step's use is on record: two first runs
      // at once both saw the other's use and both wrote a throw-away layer (a CI run lost both runs' entries).
      // A step waiting here has no use on record, and none of its own mounted: only mounted ones keep a hand-over off.
      const owner = await waitLock(OWNER_SCOPE, paths.dir, { pollMs: 100, ...(o.signal ? { signal: o.signal } : {}) });
      let use: CacheUse;
      let layered = plan.readOnly;
      try {
        const data = await lstat(paths.data);
        if (!data.isDirectory()) throw new Error(`${paths.data} is not a directory: remove it (runner cache prune) and run again`);
        // The cache goes to the step's user. With user: auto that is the project's owner, run after run, and nothing moves.
        if (!plan.readOnly && (data.uid !== o.user.uid || data.gid !== o.user.gid)) {
          if (!isRoot()) notes.push(`cache ${plan.name} belongs to uid ${data.uid} and the step runs as ${o.user.uid}: the runner (not root) cannot give it over, so the step may not write it`);
          else {
            // Never while another step has it mounted: that step could swap a directory for a symlink under the walk,
            // and the hand-over (as root, on the host) would chown what the link leads to. Then this step writes a throw-away layer.
            const given = await whileUnused(paths, o.alive, () => handOver(paths.data, o.user.uid, o.user.gid, { recursive: true }));
            if (!given.ran) {
              layered = true;
              notes.push(`cache ${plan.name} belongs to uid ${data.uid}, the step runs as ${o.user.uid}, and it cannot be given over now (${given.why}): the step reads it, and what it writes there is thrown away`);
            }
          }
        }
        use = await beginUse(paths, o.runId, o.signal);
      } finally {
        await owner.release();
      }
      const x = { plan, paths, use, real, layered };
      opened.push(x);
      const meta = await readMeta(paths.meta);
      await writeMeta(paths.meta, { ...meta, name: plan.name, project: real, maxBytes: plan.maxBytes, lastUsed: o.now().toISOString() });
      if (x.layered) {
        if (/[,:]/.test(paths.dir)) throw new Error(`cache ${plan.name} cannot be used read-only from ${paths.dir}: the engine takes an overlay's directories as a list split at "," and ":"; use a runner home without them`);
        // the step's writes land in a layer of its own, removed when the use ends
        const layer = path.join(paths.scratch, use.id);
        await ensureOwnDir(paths.scratch);
        await ensureOwnDir(layer);
        await mkdir(path.join(layer, 'upper'), { mode: 0o755 });
        await mkdir(path.join(layer, 'work'), { mode: 0o700 });
        if (isRoot()) await chown(path.join(layer, 'upper'), o.user.uid, o.user.gid);
        mounts.push({ source: paths.data, target: plan.target, readOnly: false, overlay: { upper: path.join(layer, 'upper'), work: path.join(layer, 'work') } });
        continue;
      }
      mounts.push({ source: paths.data, target: plan.target, readOnly: false });
    }
  } catch (err) {
    await Promise.all(opened.map((x) => x.use.end()));
    throw err;
  }
  return {
    mounts,
    env: cacheEnv(o.caches),
    notes,
    close: async () => {
      const said: string[] = [];
      for (const x of opened) {
        await x.use.end();
        if (x.layered) continue;
        try {
          const done = await whileUnused(x.paths, o.alive, () => pruneToBound(x.paths.data, x.plan.maxBytes));
          if (!done.ran) continue;
          const r = done.value;
          const meta = await readMeta(x.paths.meta);
          if (meta) await writeMeta(x.paths.meta, { ...meta, sizeBytes: r.after, measuredAt: o.now().toISOString() });
          if (r.cutoff !== undefined) said.push(`cache ${x.plan.name}: pruned from ${formatSize(r.before)} to ${formatSize(r.after)} (its bound is ${formatSize(x.plan.maxBytes)}; the oldest entries went)`);
        } catch (err) {
          said.push(`cache ${x.plan.name}: could not prune it: ${errorMessage(err)}`);
        }
      }
      return said;
    },
  };
}
