/**
 * The default workspace: a worktree on `run/<runId>` in
 * `<home>/worktrees/<runId>`, claimed from the project's pool when it has
 * one ready (worktree-pool.ts), else made fresh; at the end it goes back to
 * the pool, or is removed.
 */
import type { Git } from '../git/git.js';
import type { PushPolicy } from '../git/push.js';
import { childPath } from './names.js';
import { createWorktree } from './git-worktree.js';
import { GitWorkspace } from './git-workspace.js';
import type { ProjectFacts } from './project.js';
import { changeTimeNow, type WorktreePool } from './worktree-pool.js';

export function runBranch(runId: string): string {
  return `run/${runId}`;
}

export async function openRunWorktree(
  git: Git,
  project: ProjectFacts,
  worktreesRoot: string,
  runId: string,
  baseSha: string,
  push: { remote: string; policy: PushPolicy },
  pool?: WorktreePool,
): Promise<GitWorkspace> {
  const claimed = await pool?.claim(git, project, await childPath(worktreesRoot, runId, 'workspace name'), runBranch(runId), baseSha);
  const wt = claimed?.wt ?? (await createWorktree(git, project, worktreesRoot, runId, runBranch(runId), { newFrom: baseSha }));
  return new GitWorkspace({
    ...(pool?.settings.size ? { pool: { pool, preparedAt: claimed?.preparedAt ?? (await changeTimeNow(worktreesRoot)) } } : {}),
    kind: 'git_worktree',
    wt,
    git,
    remote: push.remote,
    pushPolicy: push.policy,
    created: true,
    attempt: 1,
    disposable: true,
    lanes: { root: worktreesRoot, runId },
  });
}

/**
 * A continued run's worktree (src/run/continuation.ts): a resume on its own
 * branch as it was left, a fork on a new branch from the commit it begins at.
 * Never from the pool (a pooled worktree is ready at the project's head).
 * Its base stays the first run's, so its diff is the whole change.
 */
export async function openContinuedWorktree(
  git: Git,
  project: ProjectFacts,
  worktreesRoot: string,
  runId: string,
  start: { existing: true } | { newFrom: string },
  baseSha: string,
  push: { remote: string; policy: PushPolicy },
): Promise<GitWorkspace> {
  const wt = await createWorktree(git, project, worktreesRoot, runId, runBranch(runId), start);
  wt.baseSha = baseSha;
  return new GitWorkspace({ kind: 'git_worktree', wt, git, remote: push.remote, pushPolicy: push.policy, created: true, attempt: 1, disposable: true, lanes: { root: worktreesRoot, runId } });
}
