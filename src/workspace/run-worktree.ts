/**
 * The default workspace: a worktree on `run/<runId>` in
 * `<home>/worktrees/<runId>`, claimed from the project's pool when it has
 * one ready (worktree-pool.ts), else made fresh; at the end it goes back to
 * the pool, or is removed.
 */
import { RunnerError } from '../common/errors.js';
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

/**
 * Before a resume goes on on `branch`: the branch is there and still holds
 * `commits` (the work of the steps it carries, and where the run left it).
 * One deleted, reset or rewritten since is refused: a resume on it would
 * carry steps whose work is not there (or is someone else's). Never made
 * again from a remote's branch or a tag of that name.
 */
export async function checkResumeBranch(git: Git, project: ProjectFacts, runId: string, branch: string, commits: string[]): Promise<void> {
  const call = { cwd: project.root, gitDir: project.commonDir, allowFail: true };
  const tip = await git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], call);
  if (tip.code !== 0) {
    throw new RunnerError('not_resumable', `run ${runId} cannot be resumed: its branch ${branch} is gone; fork it from a step instead (runner fork ${runId} --from STEP), whose commits its record keeps`);
  }
  const at = tip.stdout.trim();
  for (const c of new Set(commits)) {
    const held = await git.run(['merge-base', '--is-ancestor', c, at], call);
    if (held.code !== 0) {
      throw new RunnerError('not_resumable', `run ${runId} cannot be resumed: its branch ${branch} was moved since it stopped (it is at ${at.slice(0, 10)}, which does not hold ${c.slice(0, 10)} of its completed work); fork it from a step instead (runner fork ${runId} --from STEP)`);
    }
  }
}
