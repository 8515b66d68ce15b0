/**
 * Git worktrees for runs and tasks (`<home>/worktrees/<runId>`,
 * `<home>/tasks/<taskId>`). Host git never trusts what a step could have
 * written: every call after a step pins the git directory, the common
 * directory and the work tree, switches off the repository's filter drivers,
 * and first checks that the git link files are exactly what git wrote.
 */
import { chmod, chown, lstat, mkdir, mkdtemp, readFile, rename, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { GitError, WorkspaceError } from '../common/errors.js';
import { filtersOff, type Git, type GitCall } from '../git/git.js';
import { withRepoLock } from '../git/repo-lock.js';
import { childPath } from './names.js';
import { handOver } from './ownership.js';
import { BIG_FILE_CONFIG, writeBinaryPatch } from './patch-file.js';
import { removeTree } from './remove-tree.js';
import type { ProjectFacts } from './project.js';

export interface GitWorktree {
  /** the worktree's directory name (a run id or a task id) */
  name: string;
  path: string;
  branch: string;
  baseSha: string;
  /** the worktree's admin directory inside the common git directory */
  gitDir: string;
  /** the exact content of the link files as git wrote them */
  links: { dotGit: string; gitdir: string; commondir: string };
  /** the worktree directory's identity, to tell it was not swapped */
  dirId: { dev: number; ino: number };
  /** filter drivers the repository's config defines, switched off after a step ran */
  filterNames: string[];
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

/**
 * Creates a worktree at `<root>/<name>` on `branch`: a new branch from
 * `start.newFrom`, or the existing branch. The directory is created here,
 * atomically (mkdir fails if anything, a symlink included, is there), and
 * given to the project's owner, as whom git runs.
 */
export async function createWorktree(
  git: Git,
  project: ProjectFacts,
  root: string,
  name: string,
  branch: string,
  start: { newFrom: string; reset?: boolean } | { existing: true },
): Promise<GitWorktree> {
  const target = await childPath(root, name, 'workspace name');
  await mkdir(target, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
    throw new WorkspaceError('worktree_exists', `cannot create worktree ${target} (${err.code}): something is already there`);
  });
  try {
    await handOver(target, project.uid, project.gid, { recursive: false });
    // reset: a lane's branch left by an earlier visit (merged then) starts over from the new head.
    const args = 'newFrom' in start ? [start.reset ? '-B' : '-b', branch, target, start.newFrom] : [target, branch];
    await withRepoLock(project.commonDir, () =>
      git.run(['worktree', 'add', '--quiet', ...args], { cwd: project.root, gitDir: project.commonDir }),
    );
    const baseSha = await git.out(['rev-parse', `refs/heads/${branch}`], { cwd: project.root, gitDir: project.commonDir });
    return await describeWorktree(git, project, target, branch, baseSha);
  } catch (err) {
    await rm(target, { recursive: true, force: true }).catch(() => undefined);
    const call = { cwd: project.root, gitDir: project.commonDir, allowFail: true };
    await git.run(['worktree', 'prune'], call).catch(() => undefined);
    // A branch made for this worktree goes with it (only if it is still where it was made: nothing else is on it).
    if ('newFrom' in start && !start.reset) await git.run(['update-ref', '-d', `refs/heads/${branch}`, start.newFrom], call).catch(() => undefined);
    throw err;
  }
}

/** Reads what git wrote for a worktree it just created: the link files, the admin directory. */
export async function describeWorktree(git: Git, project: ProjectFacts, target: string, branch: string, baseSha: string): Promise<GitWorktree> {
  const dotGit = await readFile(path.join(target, '.git'), 'utf8');
  const m = /^gitdir: (.+)\n?$/.exec(dotGit);
  const gitDir = m ? path.resolve(target, m[1]!) : '';
  if (!m || path.dirname(gitDir) !== path.join(project.commonDir, 'worktrees')) {
    throw new WorkspaceError('worktree_unexpected', `git wrote an unexpected ${target}/.git (${JSON.stringify(dotGit)})`);
  }
  const links = {
    dotGit,
    gitdir: await readFile(path.join(gitDir, 'gitdir'), 'utf8'),
    commondir: await readFile(path.join(gitDir, 'commondir'), 'utf8'),
  };
  const st = await stat(target);
  const filterNames = await repositoryFilters(git, project);
  return { name: path.basename(target), path: target, branch, baseSha, gitDir, links, dirId: { dev: st.dev, ino: st.ino }, filterNames, project };
}

/** The filter drivers the repository's config (any scope) defines. */
export async function repositoryFilters(git: Git, project: ProjectFacts): Promise<string[]> {
  const filters = await git.run(['config', '--name-only', '--get-regexp', '^filter\\.'], {
    cwd: project.root,
    gitDir: project.commonDir,
    allowFail: true,
  });
  return [
    ...new Set(
      filters.stdout
        .split('\n')
        .filter(Boolean)
        .map((k) => k.slice('filter.'.length, k.lastIndexOf('.'))),
    ),
  ];
}

/** The pinned call for git commands on the worktree: nothing is read from the worktree's `.git`. */
export function workCall(wt: GitWorktree): GitCall {
  return {
    cwd: wt.project.root,
    gitDir: wt.gitDir,
    commonDir: wt.project.commonDir,
    workTree: wt.path,
    // Submodules are never looked into: a step could plant one whose config runs a command.
    // Files over 16 MiB are streamed by git add rather than held in memory: a step's 3 GB (sparse) file costs the host nothing.
    config: [...filtersOff(wt.filterNames), 'diff.ignoreSubmodules=all', 'submodule.recurse=false', 'status.submoduleSummary=false', BIG_FILE_CONFIG],
    isolated: true,
  };
}

/** Throws `workspace_tampered` when a step replaced or rewrote any git link file, or swapped the worktree directory. */
export async function verifyGitLinks(wt: GitWorktree): Promise<void> {
  await verifyWorktreeDir(wt);
  const checks: Array<[string, string]> = [
    [path.join(wt.path, '.git'), wt.links.dotGit],
    [path.join(wt.gitDir, 'gitdir'), wt.links.gitdir],
    [path.join(wt.gitDir, 'commondir'), wt.links.commondir],
  ];
  for (const [file, expected] of checks) {
    const st = await lstat(file).catch(() => undefined);
    const content = st?.isFile() ? await readFile(file, 'utf8').catch(() => undefined) : undefined;
    if (content !== expected) {
      throw new WorkspaceError(
        'workspace_tampered',
        `${file} is no longer the file git wrote (a step replaced or changed it): the worktree is not trusted, its work is saved as a patch only`,
      );
    }
  }
}

/** The worktree path is still the directory the runner created (not a symlink, not another directory). */
export async function verifyWorktreeDir(wt: GitWorktree): Promise<void> {
  const st = await lstat(wt.path).catch(() => undefined);
  if (!st?.isDirectory() || st.dev !== wt.dirId.dev || st.ino !== wt.dirId.ino) {
    throw new WorkspaceError('workspace_tampered', `${wt.path} is no longer the directory the runner created`);
  }
}

/** What a commit of a step's work left out: named, never passed over. */
export interface LeftOut {
  /** removed before git read the tree (nested `.git`, FIFOs, sockets, devices): git must not meet them */
  removed: Buffer[];
  /** still in the worktree and on no commit: names git refuses to store (`.GIT/config`), what git's user cannot read */
  notAdded: Buffer[];
}

/**
 * `git add -A` and a commit with `message` (sent on stdin). Returns the
 * commit, or undefined when nothing changed, and what was left out: what git
 * refuses or cannot read does not stop the rest from being committed, and is
 * named (a trailer counts it in the commit too).
 */
export async function commitAll(
  git: Git,
  wt: GitWorktree,
  message: string,
): Promise<{ commit: string | undefined } & LeftOut> {
  await verifyGitLinks(wt);
  const { removed, unreadable } = await handOver(wt.path, wt.project.uid, wt.project.gid, { recursive: true, skip: ['.git'], forGit: true });
  const call = workCall(wt);
  // No repository lock: what this writes is the worktree's own (its index, its branch's ref and log) or
  // shared and safe to write at once (objects, each written whole and renamed into place), so the
  // commits of runs working at once on one repository do not wait for each other.
  const notAdded = await addAll(git, call, unreadable);
  const staged = await git.run(['diff', '--cached', '--quiet', '--no-ext-diff', '--no-textconv'], { ...call, allowFail: true });
  if (staged.code === 0) return { commit: undefined, removed, notAdded };
  const trailer = notAdded.length ? `Runner-Not-Committed: ${notAdded.length} path${notAdded.length === 1 ? '' : 's'} (see the run's record)\n` : '';
  await git.run(['commit', '--quiet', '--no-verify', '--file=-'], { ...call, input: message + trailer });
  return { commit: await git.out(['rev-parse', 'HEAD'], call), removed, notAdded };
}

/**
 * `git add --all` of everything git can take: a name git refuses or a file it
 * cannot read is left out rather than stop the rest (--ignore-errors). Returns
 * what is left out: what git names as still untracked (bytes), and what the
 * hand-over found git's user cannot read. Throws when git failed for another
 * reason (nothing left out accounts for its exit).
 */
async function addAll(git: Git, call: GitCall, unreadable: Buffer[]): Promise<Buffer[]> {
  const r = await git.run(['add', '--all', '--ignore-errors', '--', '.'], { ...call, allowFail: true });
  if (r.code === 0) return merge(unreadable, []);
  const untracked = splitNul((await git.run(['ls-files', '-z', '--others', '--exclude-standard'], call)).stdoutBytes);
  const left = merge(unreadable, untracked);
  if (left.length === 0) throw new GitError('git_failed', `git add --all failed in ${call.cwd} (exit ${r.code}): ${r.stderr.trim().slice(0, 2000)}`);
  return left;
}

function splitNul(out: Buffer): Buffer[] {
  const parts: Buffer[] = [];
  for (let at = 0; at < out.length; ) {
    const end = out.indexOf(0, at);
    parts.push(Buffer.from(out.subarray(at, end < 0 ? out.length : end)));
    at = end < 0 ? out.length : end + 1;
  }
  return parts.filter((p) => p.length > 0);
}

/** Both lists, each path once, in byte order. */
function merge(a: Buffer[], b: Buffer[]): Buffer[] {
  const seen = new Map<string, Buffer>();
  for (const p of [...a, ...b]) seen.set(p.toString('hex'), p);
  return [...seen.values()].sort(Buffer.compare);
}

/** Where a step's uncommittable work is kept when its patch cannot carry it: from `<runs>/<runId>/steps/<stepId>.patch`. */
function keepRefFor(patchFile: string): string {
  const runId = path.basename(path.dirname(path.dirname(patchFile)));
  return `refs/runner/saved/${runId}/${path.basename(patchFile, '.patch')}`;
}

export interface SavedPatch extends LeftOut {
  /** false when nothing changed */
  saved: boolean;
  /** files over 16 MiB the patch names without their content */
  big: string[];
  /** where their content is kept: a ref holding a commit of the whole work */
  keptAt?: string;
}

/**
 * Saves what the worktree holds, against the run branch's last commit, as a
 * binary patch in `file`, without trusting any git file in the worktree: a
 * temporary index and the pinned directories. git writes the patch itself
 * (no size limit in the runner's memory) into a directory its user owns.
 * Files over 16 MiB are named in the patch, not carried (patch-file.ts): then
 * the whole work is also committed, off any branch, under
 * `refs/runner/saved/<run>/<step>` (from the patch's path), so their
 * content is not lost.
 */
export async function savePatch(git: Git, wt: GitWorktree, file: string): Promise<SavedPatch> {
  await verifyWorktreeDir(wt);
  const { removed, unreadable } = await handOver(wt.path, wt.project.uid, wt.project.gid, { recursive: true, skip: ['.git'], forGit: true });
  return withScratch(file, wt.project, async (scratch) => {
    const call = { ...workCall(wt), indexFile: path.join(scratch, 'index') };
    const head = await git.out(['rev-parse', `refs/heads/${wt.branch}`], call);
    await git.run(['read-tree', head], call);
    const notAdded = await addAll(git, call, unreadable);
    const left = { removed, notAdded };
    const out = path.join(scratch, 'patch');
    const patch = await writeBinaryPatch(git, call, ['--cached', head], out);
    if ((await stat(out)).size === 0) return { saved: false, big: [], ...left };
    await keep(out, file);
    if (!patch.tree) return { saved: true, big: patch.big, ...left };
    const commit = await git.out(['commit-tree', patch.tree, '-p', head], { ...call, input: `work that could not be committed on ${wt.branch}, kept by the runner\n` });
    const keepRef = keepRefFor(file);
    await git.run(['update-ref', keepRef, commit], call);
    return { saved: true, big: patch.big, keptAt: keepRef, ...left };
  });
}

/**
 * `git diff --binary from to` written by git itself into `file` (through a
 * directory git's user owns); files over 16 MiB are named, not carried.
 * Returns the paths of those.
 */
export async function diffToFile(git: Git, project: ProjectFacts, from: string, to: string, file: string): Promise<string[]> {
  return withScratch(file, project, async (scratch) => {
    const out = path.join(scratch, 'diff');
    const { big } = await writeBinaryPatch(git, { cwd: project.root, gitDir: project.commonDir, isolated: true }, [from, to], out);
    await keep(out, file);
    return big;
  });
}

/** A temporary directory beside `file` that git (as the project's owner) can write, removed after `fn`. */
async function withScratch<T>(file: string, project: ProjectFacts, fn: (dir: string) => Promise<T>): Promise<T> {
  const scratch = await mkdtemp(path.join(path.dirname(file), '.patch-'));
  try {
    await chown(scratch, project.uid, project.gid);
    return await fn(scratch);
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/** Moves what git wrote into the records: a record belongs to the user the runner runs as, not to the project's owner. */
async function keep(written: string, file: string): Promise<void> {
  const uid = process.getuid?.();
  const gid = process.getgid?.();
  if (uid !== undefined && gid !== undefined) await chown(written, uid, gid);
  await chmod(written, 0o644);
  await rename(written, file);
}

export async function headOf(git: Git, wt: GitWorktree): Promise<string> {
  return git.out(['rev-parse', `refs/heads/${wt.branch}`], { cwd: wt.project.root, gitDir: wt.project.commonDir });
}

/** Removes the worktree (whatever tree a step left in it: remove-tree.ts) and prunes its admin directory; the branch stays. */
export async function removeWorktree(git: Git, wt: GitWorktree): Promise<void> {
  await removeWorktreeAt(git, wt.project, wt.path);
}

/** removeWorktree by path alone: what is there is removed without being read (recovery of a cleanup cut short). */
export async function removeWorktreeAt(git: Git, project: ProjectFacts, dir: string): Promise<void> {
  // The tree is the run's own (a big one takes a while): the repository is locked only for git's bookkeeping.
  await removeTree(dir);
  await withRepoLock(project.commonDir, () => git.run(['worktree', 'prune'], { cwd: project.root, gitDir: project.commonDir }));
}

export type LaneMerge = { commit: string | null } | { conflict: string[] };

/**
 * Merges `laneHead` into the worktree's branch without a worktree of its own:
 * `git merge-tree` makes the merged tree (or names the conflicting files), a
 * merge commit records it, and the worktree moves to it (fast-forward, which
 * refuses to overwrite anything not committed).
 */
export async function mergeIntoWorktree(git: Git, wt: GitWorktree, laneHead: string, message: string): Promise<LaneMerge> {
  await verifyGitLinks(wt);
  const call = workCall(wt);
  return withRepoLock(wt.project.commonDir, async () => {
    const head = await git.out(['rev-parse', `refs/heads/${wt.branch}`], call);
    const ancestor = await git.run(['merge-base', '--is-ancestor', laneHead, head], { ...call, allowFail: true });
    if (ancestor.code === 0) return { commit: null };
    const r = await git.run(['merge-tree', '--write-tree', '-z', '--name-only', '--no-messages', head, laneHead], { ...call, allowFail: true });
    const [tree, ...files] = r.stdout.split('\0').filter(Boolean);
    if (r.code === 1) return { conflict: [...new Set(files)] };
    if (r.code !== 0 || !tree) throw new WorkspaceError('merge_failed', `git merge-tree failed (exit ${r.code}): ${r.stderr.trim().slice(0, 500)}`);
    const commit = await git.out(['commit-tree', tree, '-p', head, '-p', laneHead, '-F', '-'], { ...call, input: message });
    await git.run(['merge', '--ff-only', '--quiet', '--no-stat', commit], call);
    return { commit };
  });
}

/** Deletes branches the run made for its lanes (their work is merged, or was never asked for). */
export async function deleteBranches(git: Git, project: ProjectFacts, branches: string[]): Promise<void> {
  for (const b of branches) {
    await git.run(['update-ref', '-d', `refs/heads/${b}`], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
  }
}
