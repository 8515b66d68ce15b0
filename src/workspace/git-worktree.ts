/**
 * The per-run workspace: a git worktree on branch `run/<runId>` in
 * `<home>/worktrees/<runId>`. Every git call after a step ran pins the git
 * directory to the admin directory the runner created and first checks that
 * the worktree's `.git` file is still exactly what git wrote.
 */
import { chown, lstat, mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../common/errors.js';
import type { Git } from '../git/git.js';
import { withRepoLock } from '../git/repo-lock.js';
import { childPath } from './names.js';
import type { ProjectFacts } from './project.js';

export interface GitWorktree {
  runId: string;
  path: string;
  branch: string;
  baseSha: string;
  /** the worktree's admin directory inside the common git directory */
  gitDir: string;
  /** the exact content of `<path>/.git` as git wrote it */
  gitFile: string;
  project: ProjectFacts;
}

export async function resolveBase(git: Git, project: ProjectFacts, base: string | undefined): Promise<string> {
  const ref = base ?? 'HEAD';
  const r = await git.run(['rev-parse', '--verify', '--quiet', `${ref}^{commit}`], {
    cwd: project.root,
    gitDir: project.commonDir,
    allowFail: true,
  });
  if (r.code !== 0) {
    const hint = base ? 'fix project.base in the pipeline file' : 'make a first commit in the project';
    throw new WorkspaceError('base_missing', `base ${ref} is not a commit in ${project.root}: ${hint}`);
  }
  return r.stdout.trim();
}

export async function createWorktree(
  git: Git,
  project: ProjectFacts,
  worktreesRoot: string,
  runId: string,
  baseSha: string,
): Promise<GitWorktree> {
  const branch = `run/${runId}`;
  const target = await childPath(worktreesRoot, runId, 'run id');
  // Created here (atomically: mkdir fails if anything is there) and given to
  // the project's owner, so git and the steps, running as that owner, can write it.
  await mkdir(target, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
    throw new WorkspaceError('worktree_exists', `cannot create worktree ${target} (${err.code}): remove it, it is not in use by a live run`);
  });
  await chown(target, project.uid, project.gid);

  await withRepoLock(project.commonDir, () =>
    git.run(['worktree', 'add', '--quiet', '-b', branch, target, baseSha], {
      cwd: project.root,
      gitDir: project.commonDir,
    }),
  );
  const gitFile = await readFile(path.join(target, '.git'), 'utf8');
  const m = /^gitdir: (.+)\n?$/.exec(gitFile);
  const gitDir = m ? path.resolve(target, m[1]!) : '';
  if (!m || path.dirname(gitDir) !== path.join(project.commonDir, 'worktrees')) {
    throw new WorkspaceError('worktree_unexpected', `git wrote an unexpected ${target}/.git (${JSON.stringify(gitFile)})`);
  }
  return { runId, path: target, branch, baseSha, gitDir, gitFile, project };
}

/** Throws `workspace_tampered` when a step replaced or rewrote the worktree's `.git` file. */
export async function verifyGitLink(wt: GitWorktree): Promise<void> {
  const link = path.join(wt.path, '.git');
  const st = await lstat(link).catch(() => undefined);
  const content = st?.isFile() ? await readFile(link, 'utf8').catch(() => undefined) : undefined;
  if (content !== wt.gitFile) {
    throw new WorkspaceError(
      'workspace_tampered',
      `the worktree's .git at ${link} is no longer the file the runner wrote (a step replaced or changed it); its work is not committed from a tampered worktree`,
    );
  }
}

/** `git add -A` and a commit with `message` (sent on stdin). Returns the commit, or undefined when nothing changed. */
export async function commitAll(git: Git, wt: GitWorktree, message: string): Promise<string | undefined> {
  await verifyGitLink(wt);
  const call = { cwd: wt.path, gitDir: wt.gitDir, workTree: wt.path };
  return withRepoLock(wt.project.commonDir, async () => {
    await git.run(['add', '--all', '--', '.'], call);
    const staged = await git.run(['diff', '--cached', '--quiet'], { ...call, allowFail: true });
    if (staged.code === 0) return undefined;
    await git.run(['commit', '--quiet', '--no-verify', '--file=-'], { ...call, input: message });
    return git.out(['rev-parse', 'HEAD'], call);
  });
}

export async function headOf(git: Git, wt: GitWorktree): Promise<string> {
  return git.out(['rev-parse', `refs/heads/${wt.branch}`], { cwd: wt.project.root, gitDir: wt.project.commonDir });
}

/** Removes the worktree and prunes its admin directory; the branch stays. */
export async function removeWorktree(git: Git, wt: GitWorktree): Promise<void> {
  await withRepoLock(wt.project.commonDir, async () => {
    await rm(wt.path, { recursive: true, force: true });
    await git.run(['worktree', 'prune'], { cwd: wt.project.root, gitDir: wt.project.commonDir });
  });
}
