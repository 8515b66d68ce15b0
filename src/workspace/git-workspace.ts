/**
 * A git worktree as a run's workspace (per-run or task): steps' work becomes
 * commits on its branch; what cannot be committed becomes a patch.
 */
import path from 'node:path';
import { errorMessage, WorkspaceError } from '../common/errors.js';
import { visible, visibleBytes } from '../common/visible.js';
import { refusedByGit } from '../git/refused-names.js';
import type { Mount } from '../container/runtime.js';
import type { Git } from '../git/git.js';
import { pushBranch, type PushOutcome, type PushPolicy } from '../git/push.js';
import type { WorktreePool } from './worktree-pool.js';
import { removeTree } from './remove-tree.js';
import { takePlace } from './take-place.js';
import { commitAll, createWorktree, deleteBranches, diffToFile, headOf, mergeIntoWorktree, removeWorktree, savePatch, verifyGitLinks, verifyWorktreeDir, workCall, type GitWorktree } from './git-worktree.js';
import { makeGitCopy } from './git-copy.js';
import { handOver } from './ownership.js';
import type { LaneMergeResult, StepWork, Workspace, WorkspaceKind } from './workspace.js';

export const PROJECT_MOUNT = '/home/agent/project-workspace';

const SYSTEM_DIRS = ['/bin', '/dev', '/etc', '/lib', '/lib64', '/proc', '/sbin', '/sys', '/usr', '/home/agent'];

export interface GitWorkspaceOptions {
  kind: WorkspaceKind;
  wt: GitWorktree;
  git: Git;
  remote: string;
  pushPolicy: PushPolicy;
  created: boolean;
  attempt: number;
  /** Workspace.earlierWork */
  earlierWork?: string;
  disposable: boolean;
  /** called once the run is done with the workspace (a task's lock) */
  onRelease?: () => Promise<void>;
  /** called after the worktree was removed (a task's record) */
  onRemoved?: () => Promise<void>;
  /** where lanes go: worktrees `<root>/<runId>.<name>` on branches `run/<runId>+<name>` */
  lanes: { root: string; runId: string };
  /** the pool the worktree goes back to at the end (what changed after preparedAt, the run did) */
  pool?: { pool: WorktreePool; preparedAt: number };
}

export class GitWorkspace implements Workspace {
  readonly kind: WorkspaceKind;
  readonly created: boolean;
  readonly attempt: number;
  readonly earlierWork?: string;
  readonly disposable: boolean;
  private readonly wt: GitWorktree;
  private readonly git: Git;

  constructor(private readonly o: GitWorkspaceOptions) {
    this.kind = o.kind;
    this.wt = o.wt;
    this.git = o.git;
    this.created = o.created;
    this.attempt = o.attempt;
    if (o.earlierWork !== undefined) this.earlierWork = o.earlierWork;
    this.disposable = o.disposable;
  }

  get path(): string {
    return this.wt.path;
  }
  get owner(): { uid: number; gid: number } {
    return { uid: this.wt.project.uid, gid: this.wt.project.gid };
  }
  get project(): string {
    return this.wt.project.root;
  }
  get branch(): string {
    return this.wt.branch;
  }
  get baseSha(): string {
    return this.wt.baseSha;
  }
  get worktree(): GitWorktree {
    return this.wt;
  }

  mounts(): Mount[] {
    const mounts: Mount[] = [{ source: this.wt.project.root, target: PROJECT_MOUNT, readOnly: true }];
    // The worktree's .git names the project's git directory by its host path:
    // mounted there read-only, `git status`, `git diff` and `git log` work in
    // the step while nothing of the repository can be written.
    const dir = this.wt.project.commonDir;
    if (path.isAbsolute(dir) && !SYSTEM_DIRS.some((s) => dir === s || dir.startsWith(`${s}/`))) {
      mounts.push({ source: dir, target: dir, readOnly: true });
    }
    return mounts;
  }

  /**
   * Removes every path git ignores (what steps left that no commit holds: node_modules, build output, a venv), so
   * the next step starts from what the run committed, as a fresh checkout would; returns how many went. Git lists
   * them (a directory once); the runner removes them (removeTree: no link followed, any depth). For a verify step
   * after an agent step (run-flow.ts): it must not run what the agent planted where git does not look.
   */
  async removeIgnored(): Promise<number> {
    await verifyGitLinks(this.wt);
    const listed = await this.git.run(['ls-files', '-z', '--others', '--ignored', '--exclude-standard', '--directory', '--no-empty-directory'], workCall(this.wt));
    let removed = 0;
    for (const name of splitZ(listed.stdoutBytes)) {
      const rel = name.subarray(0, name.at(-1) === 0x2f ? -1 : undefined);
      const parts = rel.toString('latin1').split('/');
      // git names paths inside the worktree; anything else is not removed
      if (!rel.length || rel[0] === 0x2f || parts.some((p) => p === '..' || p === '.' || p === '') || parts[0] === '.git') continue;
      await removeTree(Buffer.concat([Buffer.from(`${this.wt.path}/`), rel]));
      removed++;
    }
    return removed;
  }

  /** Defined for a worktree the run made and removes at its end (`disposable`); see Workspace.takePlace. */
  get takePlace(): ((slot: string) => Promise<void>) | undefined {
    if (!this.disposable) return undefined;
    return async (slot) => {
      await verifyWorktreeDir(this.wt);
      // in place: the run's record holds this object (its recovery), and says the new directory at its next write
      Object.assign(this.wt.dirId, await takePlace(this.wt.path, slot));
    };
  }

  async prepareStep(user: { uid: number; gid: number }): Promise<void> {
    await verifyGitLinks(this.wt);
    // A step running as someone other than the project's owner gets the
    // worktree for its run; recordStep hands it back before host git reads it.
    if (user.uid !== this.wt.project.uid || user.gid !== this.wt.project.gid) {
      await handOver(this.wt.path, user.uid, user.gid, { recursive: true, skip: ['.git'] });
    }
  }

  async recordStep(message: string, patchFile: string): Promise<StepWork> {
    try {
      const { commit, removed, notAdded } = await commitAll(this.git, this.wt, message);
      const work: StepWork = { commit: commit ?? null };
      const said: string[] = [];
      if (notAdded.length) said.push(this.notRecorded(work, notAdded));
      if (removed.length) said.push(`not committed (git must not read them): ${describePaths(removed)}`);
      if (said.length) work.message = said.join('; ');
      return work;
    } catch (e) {
      // The step's work could not be committed: it is saved as a patch, never lost.
      const tampered = e instanceof WorkspaceError && e.code === 'workspace_tampered';
      const work: StepWork = {
        commit: null,
        error: tampered ? 'workspace_tampered' : 'commit_failed',
        message: tampered ? errorMessage(e) : `its work could not be committed: ${errorMessage(e)}`,
      };
      try {
        const saved = await savePatch(this.git, this.wt, patchFile);
        if (saved.saved) {
          work.patch = patchFile;
          work.message += `; its work is saved in ${patchFile}`;
          if (saved.keptAt) work.message += ` (files over 16 MiB, ${saved.big.slice(0, 3).map(visible).join(', ')}${saved.big.length > 3 ? ', …' : ''}, are named there; all of it is in ${saved.keptAt} of ${this.wt.project.root})`;
        }
        if (saved.notAdded.length) work.message += `; ${this.notRecorded(work, saved.notAdded)}`;
      } catch (pe) {
        work.unsaved = true;
        work.message += `; its work could not be saved as a patch: ${errorMessage(pe)}`;
      }
      return work;
    }
  }

  /** Marks `work` as not wholly recorded, and says what is missing and where it stays. */
  private notRecorded(work: StepWork, paths: Buffer[]): string {
    work.error ??= 'work_not_recorded';
    work.notRecorded = { paths: paths.slice(0, MAX_NAMED).map(visibleBytes), count: paths.length };
    const refused = paths.filter((p) => refusedByGit(p));
    const unreadable = paths.filter((p) => !refusedByGit(p));
    const groups = [
      ...(refused.length ? [`${describePaths(refused)} (${refused.length === 1 ? 'a name' : 'names'} git refuses to store)`] : []),
      ...(unreadable.length ? [`${describePaths(unreadable)} (git, as the project's owner, cannot read ${unreadable.length === 1 ? 'it' : 'them'}, and the runner could not change that)`] : []),
    ];
    return `its work is not all recorded: ${groups.join(', ')} ${paths.length === 1 ? 'is' : 'are'} on no commit and stay${paths.length === 1 ? 's' : ''} in the worktree ${this.wt.path}`;
  }
  /** The run's whole change, base to head, as a patch in `file`; returns the files over 16 MiB it names without their content. */
  async saveDiff(file: string): Promise<string[]> {
    return diffToFile(this.git, this.wt.project, this.wt.baseSha, await this.head(), file);
  }

  head(): Promise<string> {
    return headOf(this.git, this.wt);
  }

  async gitCopy(into: string): Promise<void> {
    await makeGitCopy(this.git, this.wt.project, { head: await this.head(), base: this.wt.baseSha, branch: this.wt.branch }, into);
  }

  push(): Promise<PushOutcome> {
    return pushBranch(this.git, this.wt.project, this.o.remote, this.wt.branch, this.o.pushPolicy);
  }

  /** A lane: a worktree of its own on `run/<runId>+<name>`, cut from this branch's head; removed after its merge. */
  async openLane(name: string): Promise<GitWorkspace> {
    const { root, runId } = this.o.lanes;
    // `+`: never in a run id nor a step id, and no name ends in `.lock` (which git refuses) this way.
    const wt = await createWorktree(this.git, this.wt.project, root, `${runId}.${name}`, `run/${runId}+${name}`, { newFrom: await this.head(), reset: true });
    return new GitWorkspace({ ...this.o, kind: this.kind, wt, created: true, disposable: true, onRelease: undefined, onRemoved: undefined, pool: undefined });
  }

  /** A worktree of its own at the run's base, on `run/<runId>+<name>` (a failed verify step tried there: run/base-check.ts); removed after. */
  async openAtBase(name: string): Promise<GitWorkspace> {
    const { root, runId } = this.o.lanes;
    const wt = await createWorktree(this.git, this.wt.project, root, `${runId}.${name}`, `run/${runId}+${name}`, { newFrom: this.wt.baseSha, reset: true });
    return new GitWorkspace({ ...this.o, kind: this.kind, wt, created: true, disposable: true, onRelease: undefined, onRemoved: undefined, pool: undefined });
  }

  async mergeLane(lane: Workspace, message: string): Promise<LaneMergeResult> {
    if (!(lane instanceof GitWorkspace) || lane === this) return { commit: null };
    return mergeIntoWorktree(this.git, this.wt, await lane.head(), message);
  }

  async dropBranches(branches: string[]): Promise<void> {
    await deleteBranches(this.git, this.wt.project, branches);
  }

  async release(remove: boolean, opts: { reuse?: boolean } = {}): Promise<void> {
    try {
      if (remove) {
        const p = opts.reuse === false ? undefined : this.o.pool;
        const pooled = p ? await p.pool.give(this.git, this.wt, p.preparedAt).catch(() => false) : false;
        if (!pooled) await removeWorktree(this.git, this.wt);
        await this.o.onRemoved?.();
      }
    } finally {
      await this.o.onRelease?.();
    }
  }
}

/** How many of a step's paths a record keeps by name. */
const MAX_NAMED = 20;

function describePaths(paths: Buffer[]): string {
  const shown = paths.slice(0, 5).map(visibleBytes).join(', ');
  return paths.length > 5 ? `${shown} and ${paths.length - 5} more` : shown;
}

/** NUL-separated byte strings (git -z), the empty ones dropped. */
function splitZ(b: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < b.length; ) {
    const end = b.indexOf(0, i);
    const stop = end < 0 ? b.length : end;
    if (stop > i) out.push(b.subarray(i, stop));
    i = stop + 1;
  }
  return out;
}
