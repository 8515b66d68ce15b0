/**
 * Task worktrees: work that spans several runs. `runner exec --task ID` works
 * in `<home>/tasks/<ID>` on branch `feat/<ID>-<slug>`, created on first use,
 * reused (and fast-forwarded to its remote when the remote moved) by every
 * later run, and never removed at the end of a run. Its record is
 * `<home>/tasks/<ID>.json`; runs on one task are serialized.
 */
import { lstat, readdir, readFile, readlink, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { RunnerError, WorkspaceError } from '../common/errors.js';
import type { Git } from '../git/git.js';
import { remoteExists, type PushPolicy } from '../git/push.js';
import { lockWorkspace, type LockWait } from './dir-lock.js';
import { createWorktree, removeWorktree, repositoryFilters, verifyGitLinks, workCall, type GitWorktree } from './git-worktree.js';
import { GitWorkspace } from './git-workspace.js';
import { childPath, safeName } from './names.js';
import type { ProjectFacts } from './project.js';

export interface TaskRecord {
  taskId: string;
  title: string | null;
  branch: string;
  project: string;
  pipelineFile: string | null;
  createdAt: string;
  lastRunAt: string | null;
  lastRunId: string | null;
  runs: number;
  worktree: Pick<GitWorktree, 'gitDir' | 'links' | 'dirId'>;
}

/** An index.lock older than this, that no process holds open, is left over from a crash. */
export const STALE_LOCK_MS = 10 * 60_000;

/** What the lock on a task is named after: its place in its runner home. */
export function taskLockKey(tasksRoot: string, taskId: string): string {
  return `task\n${tasksRoot}\n${taskId}`;
}

export function checkTaskId(taskId: string): string {
  if (safeName(taskId, 'task id') !== taskId) {
    throw new RunnerError('unsafe_name', `task id ${JSON.stringify(taskId)} is not a safe name: use letters, digits, ".", "_" and "-"`);
  }
  return taskId;
}

/** `Fix the login bug!` → `fix-the-login-bug`. Pure. */
export function slugify(title: string): string {
  return title.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '');
}

export function taskBranch(taskId: string, title: string | undefined): string {
  const slug = title ? slugify(title) : '';
  return `feat/${taskId}${slug ? `-${slug}` : ''}`;
}

export interface TaskOpen {
  git: Git;
  project: ProjectFacts;
  tasksRoot: string;
  /** where the run's lanes go (the home's worktrees/) */
  lanesRoot: string;
  taskId: string;
  title: string | undefined;
  base: string;
  remote: string;
  pushPolicy: PushPolicy;
  pipelineFile: string;
  runId: string;
  now: Date;
  wait: LockWait;
  say: (message: string) => void;
}

export async function openTaskWorktree(o: TaskOpen): Promise<GitWorkspace> {
  checkTaskId(o.taskId);
  const unlock = await lockWorkspace(taskLockKey(o.tasksRoot, o.taskId), `task ${o.taskId}`, o.wait);
  try {
    const recordFile = await childPath(o.tasksRoot, `${o.taskId}.json`, 'task id');
    const dir = path.join(o.tasksRoot, o.taskId);
    const existing = await readTaskRecord(recordFile);
    if (existing && existing.project !== o.project.root) {
      throw new WorkspaceError('task_project_mismatch', `task ${o.taskId} belongs to project ${existing.project}, not ${o.project.root}: use another task id`);
    }
    const dirThere = await lstat(dir).catch(() => undefined);
    let wt: GitWorktree;
    let created = false;
    if (existing && dirThere) {
      wt = await reuse(o, existing, dir);
    } else {
      if (dirThere) {
        throw new WorkspaceError('task_unknown_dir', `${dir} exists but has no task record: it is not reused nor removed; move it away and run again`);
      }
      wt = await create(o, existing?.branch);
      created = true;
    }
    const record: TaskRecord = {
      taskId: o.taskId,
      title: o.title ?? existing?.title ?? null,
      branch: wt.branch,
      project: o.project.root,
      pipelineFile: o.pipelineFile,
      createdAt: existing?.createdAt ?? o.now.toISOString(),
      lastRunAt: o.now.toISOString(),
      lastRunId: o.runId,
      runs: (existing?.runs ?? 0) + 1,
      worktree: { gitDir: wt.gitDir, links: wt.links, dirId: wt.dirId },
    };
    await writeFileAtomic(recordFile, JSON.stringify(record, null, 2) + '\n');
    return new GitWorkspace({
      kind: 'task_worktree',
      wt,
      git: o.git,
      remote: o.remote,
      pushPolicy: o.pushPolicy,
      created,
      attempt: record.runs,
      // reused, or made from a branch earlier runs committed to: what their agents left is here (cache/write-trust.ts)
      ...(created && wt.baseSha === o.base ? {} : { earlierWork: `task ${o.taskId}'s worktree (${wt.branch})` }),
      disposable: false,
      onRelease: unlock,
      onRemoved: () => rm(recordFile, { force: true }),
      lanes: { root: o.lanesRoot, runId: o.runId },
    });
  } catch (err) {
    await unlock();
    throw err;
  }
}

async function create(o: TaskOpen, knownBranch: string | undefined): Promise<GitWorktree> {
  const call = { cwd: o.project.root, gitDir: o.project.commonDir };
  const branch = knownBranch ?? (o.title ? taskBranch(o.taskId, o.title) : ((await keptBranch(o)) ?? taskBranch(o.taskId, undefined)));
  const local = (await o.git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}`], { ...call, allowFail: true })).code === 0;
  if (local) return createWorktree(o.git, o.project, o.tasksRoot, o.taskId, branch, { existing: true });
  const remoteRef = await fetchRemoteBranch(o, branch);
  o.say(`task ${o.taskId}: new worktree on ${branch}${remoteRef ? ` from ${o.remote}` : ''}`);
  return createWorktree(o.git, o.project, o.tasksRoot, o.taskId, branch, { newFrom: remoteRef ?? o.base });
}

async function reuse(o: TaskOpen, rec: TaskRecord, dir: string): Promise<GitWorktree> {
  const dotGit = await lstat(path.join(dir, '.git')).catch(() => undefined);
  if (dotGit?.isDirectory()) {
    throw new WorkspaceError(
      'task_git_replaced',
      `${dir}/.git has become a directory (a step ran git init?): the task worktree is not reused and its files are kept; inspect it, then runner task rm ${o.taskId}`,
    );
  }
  const call = { cwd: o.project.root, gitDir: o.project.commonDir };
  const head = await o.git.out(['rev-parse', `refs/heads/${rec.branch}`], call);
  const wt: GitWorktree = {
    name: o.taskId,
    path: dir,
    branch: rec.branch,
    baseSha: head,
    ...rec.worktree,
    filterNames: await repositoryFilters(o.git, o.project),
    project: o.project,
  };
  await verifyGitLinks(wt);
  await removeStaleIndexLock(wt.gitDir, o.say);

  const remoteRef = await fetchRemoteBranch(o, rec.branch);
  if (remoteRef) {
    const theirs = await o.git.out(['rev-parse', remoteRef], call);
    if (theirs !== head) {
      const behind = (await o.git.run(['merge-base', '--is-ancestor', head, theirs], { ...call, allowFail: true })).code === 0;
      const ahead = (await o.git.run(['merge-base', '--is-ancestor', theirs, head], { ...call, allowFail: true })).code === 0;
      if (behind) {
        await o.git.run(['merge', '--ff-only', '--quiet', theirs], workCall(wt));
        wt.baseSha = theirs;
        o.say(`task ${o.taskId}: ${rec.branch} fast-forwarded to ${o.remote} (${theirs.slice(0, 10)})`);
      } else if (!ahead) {
        o.say(`task ${o.taskId}: ${rec.branch} and ${o.remote}/${rec.branch} have diverged; the run continues on the local branch`);
      }
    }
  }
  return wt;
}

/** The one branch `feat/<taskId>` or `feat/<taskId>-…` a removed task left, if there is exactly one. */
async function keptBranch(o: TaskOpen): Promise<string | undefined> {
  const refs = await o.git.out(['for-each-ref', '--format=%(refname:short)', `refs/heads/feat/`], {
    cwd: o.project.root,
    gitDir: o.project.commonDir,
  });
  const mine = refs.split('\n').filter((b) => b === `feat/${o.taskId}` || b.startsWith(`feat/${o.taskId}-`));
  return mine.length === 1 ? mine[0] : undefined;
}

/** Fetches `branch` from the remote, when both exist; returns the remote-tracking ref. */
async function fetchRemoteBranch(o: TaskOpen, branch: string): Promise<string | undefined> {
  if (!(await remoteExists(o.git, o.project, o.remote))) return undefined;
  const ref = `refs/remotes/${o.remote}/${branch}`;
  const r = await o.git.run(['fetch', '--quiet', '--no-tags', o.remote, `+refs/heads/${branch}:${ref}`], {
    cwd: o.project.root,
    gitDir: o.project.commonDir,
    allowFail: true,
  });
  return r.code === 0 ? ref : undefined;
}

/** Removes `<gitDir>/index.lock` when it is old and no process holds it open. */
export async function removeStaleIndexLock(gitDir: string, say: (m: string) => void, now = Date.now()): Promise<boolean> {
  const lock = path.join(gitDir, 'index.lock');
  const st = await stat(lock).catch(() => undefined);
  if (!st) return false;
  if (now - st.mtimeMs < STALE_LOCK_MS) {
    throw new WorkspaceError('index_locked', `${lock} exists and is recent: another git process may be working there; wait, then run again`);
  }
  if (await isOpenByAnyProcess(lock)) {
    throw new WorkspaceError('index_locked', `${lock} is held open by a running process: wait for it, then run again`);
  }
  await rm(lock, { force: true });
  say(`removed a stale ${lock} (${Math.round((now - st.mtimeMs) / 60_000)} minutes old, held by no process)`);
  return true;
}

async function isOpenByAnyProcess(file: string): Promise<boolean> {
  for (const pid of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(pid)) continue;
    for (const fd of await readdir(`/proc/${pid}/fd`).catch(() => [] as string[])) {
      if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => '')) === file) return true;
    }
  }
  return false;
}

export async function readTaskRecord(file: string): Promise<TaskRecord | undefined> {
  const text = await readFile(file, 'utf8').catch(() => undefined);
  return text ? (JSON.parse(text) as TaskRecord) : undefined;
}

export async function listTasks(tasksRoot: string): Promise<TaskRecord[]> {
  const names = await readdir(tasksRoot).catch(() => [] as string[]);
  const records = await Promise.all(names.filter((n) => n.endsWith('.json')).map((n) => readTaskRecord(path.join(tasksRoot, n))));
  return records.filter((r): r is TaskRecord => r !== undefined).sort((a, b) => a.taskId.localeCompare(b.taskId));
}

function taskWorktree(project: ProjectFacts, tasksRoot: string, rec: TaskRecord, filterNames: string[]): GitWorktree {
  const dir = path.join(tasksRoot, rec.taskId);
  return { name: rec.taskId, path: dir, branch: rec.branch, baseSha: '', ...rec.worktree, filterNames, project };
}

/** What the task's worktree holds that no commit has, as `git status` lines; empty when nothing. */
export async function uncommittedChanges(git: Git, project: ProjectFacts, tasksRoot: string, rec: TaskRecord): Promise<string> {
  const wt = taskWorktree(project, tasksRoot, rec, await repositoryFilters(git, project));
  const dotGit = await lstat(path.join(wt.path, '.git')).catch(() => undefined);
  if (!dotGit) return '';
  if (!dotGit.isFile()) return ".git is not the file git wrote (a step replaced it)";
  const r = await git.run(['status', '--porcelain', '--untracked-files=all'], { ...workCall(wt), allowFail: true });
  return r.stdout.trim();
}

/** `runner task rm`: removes the worktree and its record; the branch stays. */
export async function removeTask(git: Git, project: ProjectFacts, tasksRoot: string, rec: TaskRecord): Promise<void> {
  await removeWorktree(git, taskWorktree(project, tasksRoot, rec, []));
  await rm(path.join(tasksRoot, `${rec.taskId}.json`), { force: true });
}
