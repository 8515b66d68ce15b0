/**
 * Pushing a run branch to the project's remote. Credentials are whatever the
 * user's git already uses (an ssh agent, a credential helper in their own
 * config); the runner never writes them to `.git/config` nor passes them in argv.
 */
import type { ProjectFacts } from '../workspace/project.js';
import type { Git } from './git.js';

export type PushPolicy = 'auto' | 'always' | 'never';

export type PushOutcome =
  | { pushed: true; remote: string }
  | { pushed: false; reason: 'policy_never' | 'no_remote' }
  /** push: always, and the project has no such remote */
  | { pushed: false; reason: 'no_remote_always'; remote: string }
  | { pushed: false; reason: 'push_failed'; remote: string; error: string };

export async function remoteExists(git: Git, project: ProjectFacts, remote: string): Promise<boolean> {
  const names = await git.out(['remote'], { cwd: project.root, gitDir: project.commonDir });
  return names.split('\n').includes(remote);
}

export async function pushBranch(
  git: Git,
  project: ProjectFacts,
  remote: string,
  branch: string,
  policy: PushPolicy,
): Promise<PushOutcome> {
  if (policy === 'never') return { pushed: false, reason: 'policy_never' };
  if (!(await remoteExists(git, project, remote))) {
    if (policy === 'auto') return { pushed: false, reason: 'no_remote' };
    return { pushed: false, reason: 'no_remote_always', remote };
  }
  const ref = `refs/heads/${branch}`;
  // Not under the repository lock: a slow remote must not stall other runs.
  const r = await git.run(['push', '--quiet', '--no-verify', remote, `${ref}:${ref}`], {
    cwd: project.root,
    gitDir: project.commonDir,
    allowFail: true,
  });
  if (r.code === 0) return { pushed: true, remote };
  return { pushed: false, reason: 'push_failed', remote, error: r.stderr.trim() || `git push exited ${r.code}` };
}

/** What a person types to push the branch later. */
export function pushLaterHint(projectRoot: string, remote: string, branch: string): string {
  return `git -C ${projectRoot} push ${remote} ${branch}`;
}
