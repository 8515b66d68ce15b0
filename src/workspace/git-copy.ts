/**
 * A step on another node (swarm) gets no mount of the project's git
 * directory: its worktree travels by tar, and a small repository of its own
 * travels with it as the workspace's top-level `.git`, so `git log`,
 * `git diff $RUNNER_BASE_SHA`, `git diff HEAD~N` and `git status` answer as
 * they do on the runner's machine. It holds the branch's head with its
 * history down to the run's base (a shallow fetch over file://), HEAD on the
 * run's branch, and an index of HEAD. It is the step's to break: what comes
 * back under `.git` is dropped (tar-transfer.ts), and the runner never runs
 * git in it.
 */
import { chown, mkdir } from 'node:fs/promises';
import { pathToFileURL } from 'node:url';
import type { Git, GitCall } from '../git/git.js';
import type { ProjectFacts } from './project.js';

export interface GitCopyOf {
  /** the branch's head: HEAD of the copy */
  head: string;
  /** the run's base: the oldest commit the copy holds */
  base: string;
  /** HEAD's branch in the copy, as in the worktree */
  branch: string;
}

/**
 * How deep to fetch from the head so the base is in the copy: one more than
 * the commits between them. Any path from the head down to the base passes
 * only through those commits, so the base is never farther than that. Pure.
 */
export function historyDepth(commitsSinceBase: number): number {
  if (!Number.isInteger(commitsSinceBase) || commitsSinceBase < 0) throw new RangeError(`a count of commits, not ${commitsSinceBase}`);
  return commitsSinceBase + 1;
}

/**
 * The fetch that fills the copy: the head into the branch, and the base as
 * well when it is not the head's ancestor (so `git diff BASE` still works).
 * Pure.
 */
export function copyFetchArgs(from: string, of: GitCopyOf, commitsSinceBase: number, baseIsAncestor: boolean): string[] {
  return [
    'fetch',
    '--quiet',
    '--no-tags',
    '--no-write-fetch-head',
    '--no-recurse-submodules',
    `--depth=${historyDepth(commitsSinceBase)}`,
    pathToFileURL(from).href,
    `${of.head}:refs/heads/${of.branch}`,
    ...(baseIsAncestor || of.base === of.head ? [] : [`${of.base}:refs/runner/base`]),
  ];
}

/** Settings for the fetch: the source is the project's own repository, sent by commit id over file:// (which keeps --depth). */
const FETCH_CONFIG = ['uploadpack.allowAnySHA1InWant=true', 'protocol.file.allow=always', 'fetch.writeCommitGraph=false', 'submodule.recurse=false'];

/**
 * Makes `into` (a new directory, which git may write as the project's owner) the step's `.git`: a repository
 * with `of.head` on `of.branch`, its history down to `of.base`, and an index of HEAD.
 */
export async function makeGitCopy(git: Git, project: ProjectFacts, of: GitCopyOf, into: string): Promise<void> {
  const source: GitCall = { cwd: project.root, gitDir: project.commonDir, isolated: true };
  const count = Number(await git.out(['rev-list', '--count', `${of.base}..${of.head}`], source));
  const ancestor = (await git.run(['merge-base', '--is-ancestor', of.base, of.head], { ...source, allowFail: true })).code === 0;
  await mkdir(into, { mode: 0o755 });
  await chown(into, project.uid, project.gid);
  const copy: GitCall = { cwd: into, gitDir: into, isolated: true };
  // no template: no sample hooks, nothing but what git needs
  await git.run(['init', '--quiet', '--bare', '--template=', into], { cwd: into, isolated: true });
  await git.run(copyFetchArgs(project.commonDir, of, count, ancestor), { ...copy, config: FETCH_CONFIG });
  // the workspace above it is its work tree, as a clone's
  await git.run(['config', 'core.bare', 'false'], copy);
  await git.run(['symbolic-ref', 'HEAD', `refs/heads/${of.branch}`], copy);
  await git.run(['read-tree', 'HEAD'], copy);
}
