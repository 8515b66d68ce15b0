/**
 * The home's caches as `runner cache ls` and `runner cache prune` see them:
 * one place the CLI (and any later front door) calls. A cache in use by a
 * live run is neither measured nor removed: it is said to be in use.
 */
import { lstat, readdir, realpath } from 'node:fs/promises';
import path from 'node:path';
import { removeTree } from '../workspace/remove-tree.js';
import { listCacheDirs, type CacheListing } from './cache-dirs.js';
import { whileUnused, type RunAlive } from './cache-use.js';
import { DEFAULT_CACHE_MAX_BYTES } from './ecosystems.js';
import { diskUsage } from './disk-usage.js';

export interface CacheRow {
  project: string;
  name: string;
  /** bytes on disk: measured now, or when last measured while it is in use */
  bytes: number | null;
  maxBytes: number;
  lastUsed: string | null;
  /** why it was not measured now (in use by a run) */
  busy?: string;
  dir: string;
}

export interface CacheFilter {
  /** a project directory (its real path when it still exists), or the path `ls` shows */
  project?: string;
  name?: string;
  /** caches no step has used for this long */
  unusedForMs?: number;
}

/** The project path a filter names, as the caches record it. */
async function projectPath(p: string): Promise<string> {
  const abs = path.resolve(p);
  return realpath(abs).catch(() => abs);
}

async function matching(home: string, f: CacheFilter, now: Date): Promise<CacheListing[]> {
  const project = f.project !== undefined ? await projectPath(f.project) : undefined;
  return (await listCacheDirs(home)).filter((c) => {
    if (project !== undefined && c.project !== project) return false;
    if (f.name !== undefined && c.name !== f.name) return false;
    if (f.unusedForMs !== undefined) {
      const last = c.meta?.lastUsed ? Date.parse(c.meta.lastUsed) : 0;
      if (now.getTime() - last < f.unusedForMs) return false;
    }
    return true;
  });
}

export async function listCaches(home: string, f: CacheFilter, alive: RunAlive, now = new Date()): Promise<CacheRow[]> {
  const rows: CacheRow[] = [];
  for (const c of await matching(home, f, now)) {
    // the installed trees kept beside npm's tarballs (npm-tree/) count too: they are on the same disk
    const measured = await whileUnused(c.paths, alive, async () => {
      const data = await diskUsage(c.paths.data);
      const trees = await lstat(c.paths.trees).then((st) => (st.isDirectory() ? diskUsage(c.paths.trees) : undefined)).catch(() => undefined);
      return { bytes: data.bytes + (trees?.bytes ?? 0) };
    });
    rows.push({
      project: c.project,
      name: c.name,
      bytes: measured.ran ? measured.value.bytes : (c.meta?.sizeBytes ?? null),
      maxBytes: c.meta?.maxBytes ?? DEFAULT_CACHE_MAX_BYTES,
      lastUsed: c.meta?.lastUsed ?? null,
      ...(measured.ran ? {} : { busy: measured.why }),
      dir: c.paths.data,
    });
  }
  return rows;
}

export interface PruneOutcome {
  project: string;
  name: string;
  /** bytes freed, when it was removed */
  freed?: number;
  /** why it was kept */
  kept?: string;
}

/** Removes the caches that match, whole; a project left with none loses its directory too. */
export async function removeCaches(home: string, f: CacheFilter, alive: RunAlive, now = new Date()): Promise<PruneOutcome[]> {
  const out: PruneOutcome[] = [];
  for (const c of await matching(home, f, now)) {
    const done = await whileUnused(c.paths, alive, async () => {
      const size = await diskUsage(c.paths.dir);
      await removeTree(c.paths.dir);
      return size.bytes;
    });
    out.push(done.ran ? { project: c.project, name: c.name, freed: done.value } : { project: c.project, name: c.name, kept: done.why });
    const projectDir = path.dirname(c.paths.dir);
    const left = await readdir(projectDir).catch(() => ['?']);
    if (left.every((n) => n === 'project.json') && (await lstat(projectDir).catch(() => undefined))?.isDirectory()) await removeTree(projectDir);
  }
  return out;
}
