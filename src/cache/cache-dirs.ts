/**
 * Where a project's caches live in the runner home, and what the runner
 * keeps about each. Only `data/` is ever mounted into a step; the rest is
 * the runner's own, out of any step's reach:
 *
 *   caches/<project key>/project.json        the project's real path
 *   caches/<project key>/<name>/data/        the cache, as the tool left it
 *   caches/<project key>/<name>/cache.json   last use, bound, size when last measured
 *   caches/<project key>/<name>/users/       one file per step using it now (cache-use.ts)
 *   caches/<project key>/<name>/scratch/     a read-only use's throw-away layer, while it runs
 *   caches/<project key>/npm/trees/<key>/    installed trees (npm-tree/): mounted read-only, written by the runner alone
 */
import { lstat, mkdir, readdir, readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { WorkspaceError } from '../common/errors.js';
import { CACHE_NAME_RE } from './ecosystems.js';
import { projectKey } from './project-key.js';

export interface CacheMeta {
  name: string;
  /** the project's real path */
  project: string;
  maxBytes: number;
  /** when a step last started with it (ISO) */
  lastUsed: string;
  /** bytes on disk when last measured (after a step that wrote it), and when */
  sizeBytes?: number;
  measuredAt?: string;
}

export interface CachePaths {
  dir: string;
  data: string;
  meta: string;
  users: string;
  scratch: string;
  /** the installed trees kept for this project (npm: npm-tree/keep.ts) */
  trees: string;
}

export function cachesRoot(home: string): string {
  return path.join(home, 'caches');
}

export function cachePaths(projectDir: string, name: string): CachePaths {
  const dir = path.join(projectDir, name);
  return { dir, data: path.join(dir, 'data'), meta: path.join(dir, 'cache.json'), users: path.join(dir, 'users'), scratch: path.join(dir, 'scratch'), trees: path.join(dir, 'trees') };
}

/** A directory of the runner's own: made when missing, and refused when something else (a symlink) stands there. */
export async function ensureOwnDir(dir: string, mode = 0o700): Promise<void> {
  await mkdir(dir, { recursive: true, mode });
  const st = await lstat(dir);
  if (!st.isDirectory()) throw new WorkspaceError('cache_tampered', `${dir} is not a directory (a symlink?): the runner made it as one; remove it and run again`);
}

/** The project's cache directory, made when missing, named by the project's real path. */
export async function projectCacheDir(home: string, project: string): Promise<{ dir: string; real: string }> {
  const real = await realpath(project);
  const root = cachesRoot(home);
  // Only the runner and the engine (root) go in here: a cache may hold a project's private packages.
  await ensureOwnDir(root);
  const dir = path.join(root, projectKey(real));
  await ensureOwnDir(dir);
  const file = path.join(dir, 'project.json');
  if (!(await lstat(file).catch(() => undefined))) await writeFileAtomic(file, `${JSON.stringify({ path: real })}\n`);
  return { dir, real };
}

export async function readMeta(file: string): Promise<CacheMeta | undefined> {
  try {
    return JSON.parse(await readFile(file, 'utf8')) as CacheMeta;
  } catch {
    return undefined;
  }
}

export async function writeMeta(file: string, meta: CacheMeta): Promise<void> {
  await writeFileAtomic(file, `${JSON.stringify(meta)}\n`);
}

export interface CacheListing {
  key: string;
  project: string;
  name: string;
  paths: CachePaths;
  meta: CacheMeta | undefined;
}

/** Every cache of the home, by project and name; what is not the runner's layout is passed over. */
export async function listCacheDirs(home: string): Promise<CacheListing[]> {
  const root = cachesRoot(home);
  const out: CacheListing[] = [];
  for (const key of (await readdir(root).catch(() => [] as string[])).sort()) {
    const projectDir = path.join(root, key);
    if (!(await lstat(projectDir).catch(() => undefined))?.isDirectory()) continue;
    const project = await readFile(path.join(projectDir, 'project.json'), 'utf8').then((t) => (JSON.parse(t) as { path: string }).path, () => '?');
    for (const name of (await readdir(projectDir)).sort()) {
      if (!CACHE_NAME_RE.test(name)) continue;
      const paths = cachePaths(projectDir, name);
      if (!(await lstat(paths.dir).catch(() => undefined))?.isDirectory()) continue;
      out.push({ key, project, name, paths, meta: await readMeta(paths.meta) });
    }
  }
  return out;
}
