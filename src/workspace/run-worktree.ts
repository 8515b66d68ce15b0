/** The default workspace: a fresh worktree on `run/<runId>` in `<home>/worktrees/<runId>`, removed at the end. */
import type { Git } from '../git/git.js';
import type { PushPolicy } from '../git/push.js';
import { createWorktree } from './git-worktree.js';
import { GitWorkspace } from './git-workspace.js';
import type { ProjectFacts } from './project.js';

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
): Promise<GitWorkspace> {
  const wt = await createWorktree(git, project, worktreesRoot, runId, runBranch(runId), { newFrom: baseSha });
  return new GitWorkspace({
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
