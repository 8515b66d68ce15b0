/**
 * A persistent directory as a run's workspace: the project directory itself,
 * read-write, files accumulating across runs; no branch, no commit, no push.
 * Runs on one directory are serialized; each step's changes are listed.
 */
import { lstat, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import { cacheDir } from '../cli/code-cache.js';
import { WorkspaceError } from '../common/errors.js';
import type { Mount } from '../container/runtime.js';
import { resolveUser } from '../plan/step-plan.js';
import { lockWorkspace, type LockWait } from './dir-lock.js';
import { missingProject } from './project.js';
import { diffSnapshots, takeSnapshot, type Snapshot } from './snapshot.js';
import type { LaneMergeResult, StepWork, Workspace } from './workspace.js';

/** Checked before a run exists: a bad directory leaves nothing behind. Returns its owner. */
export async function checkPersistentDir(
  dir: string,
  /** each step's `user` setting, to check they can write the directory */
  userSettings: string[],
): Promise<{ uid: number; gid: number }> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st) throw missingProject(dir, 'create it, or fix project.path');
  if (st.isSymbolicLink()) {
    const to = await readlink(dir).catch(() => '?');
    throw new WorkspaceError('project_symlink', `project path ${dir} is a symlink (to ${to}): point project.path at the directory itself`);
  }
  if (!st.isDirectory()) throw new WorkspaceError('project_not_dir', `project path ${dir} is not a directory: fix project.path`);
  // the runner's code cache is bytecode it runs on the host (src/cli/code-cache.ts): no step may write it
  const real = await realpath(dir);
  const cache = path.resolve(cacheDir());
  if (isWithin(real, cache)) {
    throw new WorkspaceError('project_holds_runner', `persistent directory ${dir} holds the runner's code cache (${cache}), which the runner runs on the host, and every step may write the directory: use a directory that does not hold it (not your home), or set XDG_CACHE_HOME outside it`);
  }
  const owner = { uid: st.uid, gid: st.gid };
  const other = userSettings.map((u) => resolveUser(u, owner)).find((u) => u.uid !== owner.uid);
  if (other) {
    throw new WorkspaceError(
      'user_mismatch',
      `persistent directory ${dir} belongs to uid ${owner.uid}, but a step runs as uid ${other.uid}` +
        (owner.uid === 0 ? ' (a step never runs as root unless user: "0:0" is set)' : '') +
        `: give the directory to the step's user (chown -R ${other.uid}:${other.gid} ${dir}) or set user: to its owner`,
    );
  }
  return owner;
}

export async function openPersistentDir(dir: string, wait: LockWait): Promise<PersistentDirWorkspace> {
  const st = await lstat(dir);
  const owner = { uid: st.uid, gid: st.gid };
  const real = await realpath(dir);
  const unlock = await lockWorkspace(`dir\n${real}`, `persistent directory ${real}`, wait);
  try {
    return new PersistentDirWorkspace(real, owner, st.ino, st.dev, await takeSnapshot(real), unlock);
  } catch (err) {
    await unlock();
    throw err;
  }
}

export class PersistentDirWorkspace implements Workspace {
  readonly kind = 'persistent_directory' as const;
  readonly branch = null;
  readonly baseSha = null;
  readonly created = false;
  readonly attempt = 1;
  readonly disposable = false;
  /** always: the directory holds what its earlier runs left, their agents' work among them (no step writes the caches) */
  readonly earlierWork: string;

  constructor(
    readonly path: string,
    readonly owner: { uid: number; gid: number },
    private readonly ino: number,
    private readonly dev: number,
    private last: Snapshot,
    private readonly unlock: () => Promise<void>,
  ) {
    this.earlierWork = `the persistent directory ${path}`;
  }

  get project(): string {
    return this.path;
  }

  /** Steps that run at once share the directory (validation asks the file to say shared_workspace: true). */
  async openLane(): Promise<Workspace> {
    return this;
  }

  async mergeLane(): Promise<LaneMergeResult> {
    return { commit: null };
  }

  async dropBranches(): Promise<void> {}

  /** Nothing is mounted at project-workspace: the directory is the workspace. */
  mounts(): Mount[] {
    return [];
  }

  async prepareStep(): Promise<void> {
    const st = await lstat(this.path).catch(() => undefined);
    if (!st?.isDirectory() || st.ino !== this.ino || st.dev !== this.dev) {
      throw new WorkspaceError('workspace_tampered', `${this.path} is no longer the directory the run started with`);
    }
  }

  async recordStep(): Promise<StepWork> {
    const now = await takeSnapshot(this.path, this.last);
    const changes = diffSnapshots(this.last, now);
    this.last = now;
    return { commit: null, changes };
  }

  async head(): Promise<null> {
    return null;
  }

  async push(): Promise<null> {
    return null;
  }

  async release(): Promise<void> {
    await this.unlock();
  }
}

/** `inner` is `outer` or below it (both resolved). Pure. */
function isWithin(outer: string, inner: string): boolean {
  const rel = path.relative(outer, inner);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
