/**
 * Prepared worktrees per project (`<home>/pool/<project key>/<slot>`), so a
 * run's worktree costs what differs between two commits, not the size of the
 * repository. A run claims a slot (a rename, then `git worktree repair` and
 * `git checkout -B run/<id> <base>`, which writes only the files that
 * differ); at its end the worktree goes back only once it is again exactly
 * what a fresh checkout of its base would be:
 *
 * - everything the run touched (touched.ts: by change time, owner, links and
 *   type) is removed, and a touched directory is made anew (a fresh inode:
 *   no mode, owner, extended attribute or ACL a step set survives);
 * - git checks the base out again (`checkout -f --detach`), cleans what is
 *   untracked or ignored, and must then report nothing at all (`status
 *   --ignored --untracked-files=all`);
 *
 * otherwise it is removed as before. Bounded by RUNNER_WORKTREE_POOL slots
 * per project (default 2; 0 turns pooling off) and by free disk; a project
 * with filter drivers (git-lfs) is never pooled, since a worktree handed back
 * is checked out with its filters off.
 */
import { createHash, randomBytes } from 'node:crypto';
import { lchown, lstat, mkdir, readdir, readFile, rename, rm, rmdir, statfs, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../common/errors.js';
import type { Git, GitCall } from '../git/git.js';
import { filtersOff } from '../git/git.js';
import { withRepoLock } from '../git/repo-lock.js';
import { describeWorktree, repositoryFilters, verifyGitLinks, type GitWorktree } from './git-worktree.js';
import type { ProjectFacts } from './project.js';
import { removeTree } from './remove-tree.js';
import { planCleanup, type EntryFacts } from './touched.js';

export interface PoolSettings {
  /** slots kept per project; 0: no pool */
  size: number;
  /** a worktree goes back only while the disk keeps this many bytes free */
  minFreeBytes: number;
  /** …and this share of it */
  minFreeRatio: number;
}

export const DEFAULT_POOL_SIZE = 2;
/** past this many entries a worktree is removed rather than cleaned entry by entry */
const MAX_ENTRIES = 500_000;

/** RUNNER_WORKTREE_POOL: slots per project (0: off). Pure. */
export function poolSettings(env: NodeJS.ProcessEnv = process.env): PoolSettings {
  const raw = env.RUNNER_WORKTREE_POOL;
  const n = raw === undefined || raw === '' ? DEFAULT_POOL_SIZE : Number(raw);
  if (!Number.isInteger(n) || n < 0 || n > 64) throw new UsageError(`RUNNER_WORKTREE_POOL must be a whole number from 0 to 64 (slots per project; 0 turns the pool off), got "${raw}"`);
  return { size: n, minFreeBytes: 2 * 1024 ** 3, minFreeRatio: 0.1 };
}

/** A claimed worktree, and when it was handed to the run (what changed after that, the run did). */
export interface Claimed {
  wt: GitWorktree;
  preparedAt: number;
}

export class WorktreePool {
  constructor(
    /** `<home>/pool` */
    readonly root: string,
    readonly settings: PoolSettings = poolSettings(),
  ) {}

  /** Where a project's slots are: keyed by its git directory. */
  dirFor(project: ProjectFacts): string {
    // the umask writes the modes: a runner with another one has slots of its own
    const umask = process.umask();
    return path.join(this.root, `${createHash('sha256').update(project.commonDir).digest('hex').slice(0, 16)}-${umask.toString(8).padStart(3, '0')}`);
  }

  /** A slot moved to `target` and checked out on a new `branch` at `baseSha`; undefined when there is none to take. */
  async claim(git: Git, project: ProjectFacts, target: string, branch: string, baseSha: string): Promise<Claimed | undefined> {
    if (!this.settings.size) return undefined;
    const dir = this.dirFor(project);
    const slots = (await readdir(dir).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
    // filter drivers configured since a slot came back: a fresh checkout would run them
    if (!slots.length || (await repositoryFilters(git, project)).length) return undefined;
    for (const slot of slots) {
      const from = path.join(dir, slot);
      const base = { cwd: project.root, gitDir: project.commonDir };
      const taken = await withRepoLock(project.commonDir, async () => {
        try {
          await rename(from, target);
        } catch {
          return false; // another run took it
        }
        try {
          await git.run(['worktree', 'repair', target], base);
          const adminDir = await adminDirOf(target, project);
          const inSlot = { ...base, gitDir: adminDir, commonDir: project.commonDir, workTree: target };
          const at = (await readFile(path.join(adminDir, 'HEAD'), 'utf8')).trim();
          if (at === baseSha) {
            // already at the base, as it was checked when it came back: a branch, and nothing to write
            await git.run(['branch', '--no-track', branch, baseSha], base);
            await git.run(['symbolic-ref', 'HEAD', `refs/heads/${branch}`], inSlot);
          } else {
            // a checkout rewrites only files whose content differs: with other attributes (eol, encodings) it would not match a fresh one
            const attrs = await git.run(['diff', '--quiet', at, baseSha, '--', '.gitattributes', ':(glob)**/.gitattributes'], { ...base, allowFail: true });
            if (attrs.code !== 0) throw new Error('its .gitattributes differ from the base\'s');
            await git.run(['checkout', '--quiet', '--force', '-B', branch, baseSha], inSlot);
          }
          return true;
        } catch {
          // not a worktree git still knows, or not one to move to this base: it goes
          await removeTree(target).catch(() => undefined);
          await git.run(['worktree', 'prune'], { ...base, allowFail: true });
          await git.run(['update-ref', '-d', `refs/heads/${branch}`, baseSha], { ...base, allowFail: true });
          return false;
        }
      });
      if (!taken) continue;
      const wt = await describeWorktree(git, project, target, branch, baseSha);
      return { wt, preparedAt: await changeTimeNow(path.dirname(target)) };
    }
    return undefined;
  }

  /**
   * Takes a run's worktree back, made again what a fresh checkout of its base
   * is; false (and the worktree untouched by the pool) when it cannot: the
   * caller removes it.
   */
  async give(git: Git, wt: GitWorktree, preparedAt: number): Promise<boolean> {
    if (!this.settings.size || wt.filterNames.length) return false;
    const dir = this.dirFor(wt.project);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const slots = (await readdir(dir)).filter((n) => !n.startsWith('.'));
    if (slots.length >= this.settings.size || !(await roomOnDisk(dir, this.settings))) return false;
    try {
      await verifyGitLinks(wt);
    } catch {
      return false;
    }
    // the link file is git's, not the run's: its mode, owner or attributes changed, the worktree goes
    const link = await lstat(path.join(wt.path, '.git')).catch(() => undefined);
    if (!link || link.ctimeMs >= preparedAt || link.nlink !== 1 || link.uid !== wt.project.uid || link.gid !== wt.project.gid) return false;
    const owner = { uid: wt.project.uid, gid: wt.project.gid };
    const entries = await listTree(wt.path);
    if (!entries) return false;
    const plan = planCleanup(entries, preparedAt, owner);
    for (const rel of plan.remove) await removeTree(path.join(wt.path, rel));
    for (const rel of plan.renew) await renewDir(path.join(wt.path, rel), owner, rel === '' ? 0o755 : 0o777);
    const call: GitCall = { cwd: wt.project.root, gitDir: wt.gitDir, commonDir: wt.project.commonDir, workTree: wt.path };
    const checked: GitCall = { ...call, config: [...filtersOff(wt.filterNames), 'submodule.recurse=false'], isolated: true };
    const clean = await withRepoLock(wt.project.commonDir, async () => {
      await git.run(['checkout', '--quiet', '--force', '--detach', wt.baseSha], { ...call, config: ['submodule.recurse=false'] });
      await git.run(['clean', '-ffdxq'], checked);
      const status = await git.run(['status', '--porcelain=v1', '-z', '--ignored=matching', '--untracked-files=all'], checked);
      const head = await git.out(['rev-parse', 'HEAD'], checked);
      return status.stdout === '' && head === wt.baseSha;
    });
    if (!clean) return false;
    const slot = path.join(dir, `${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`);
    return withRepoLock(wt.project.commonDir, async () => {
      // counted again: runs ending at once must not make the pool bigger than its bound
      if ((await readdir(dir)).filter((n) => !n.startsWith('.')).length >= this.settings.size) return false;
      await rename(wt.path, slot);
      const r = await git.run(['worktree', 'repair', slot], { cwd: wt.project.root, gitDir: wt.project.commonDir, allowFail: true });
      if (r.code === 0) return true;
      await rename(slot, wt.path).catch(() => undefined);
      return false;
    });
  }
}

/** The admin directory a worktree's `.git` file names, which must be the project's. */
async function adminDirOf(worktree: string, project: ProjectFacts): Promise<string> {
  const m = /^gitdir: (.+)\n?$/.exec(await readFile(path.join(worktree, '.git'), 'utf8'));
  const adminDir = m ? path.resolve(worktree, m[1]!) : '';
  if (path.dirname(adminDir) !== path.join(project.commonDir, 'worktrees')) throw new Error(`${worktree}/.git does not name a worktree of ${project.root}`);
  return adminDir;
}

/** Every entry under `root` (parents first), never following a symlink; undefined when some directory cannot be read. */
async function listTree(root: string): Promise<EntryFacts[] | undefined> {
  const out: EntryFacts[] = [];
  const visit = async (rel: string): Promise<boolean> => {
    const abs = rel ? path.join(root, rel) : root;
    const st = await lstat(abs).catch(() => undefined);
    if (!st) return false;
    const type = st.isFile() ? 'file' : st.isDirectory() ? 'dir' : st.isSymbolicLink() ? 'symlink' : 'other';
    out.push({ rel, type, ctimeMs: st.ctimeMs, atimeMs: st.atimeMs, uid: st.uid, gid: st.gid, nlink: st.nlink });
    if (out.length > MAX_ENTRIES) return false;
    if (type !== 'dir') return true;
    const names = await readdir(abs).catch(() => undefined);
    if (!names) return false;
    for (const name of names) {
      // the worktree's link to its git directory is the runner's (verifyGitLinks checked it)
      if (!rel && name === '.git') continue;
      if (!(await visit(rel ? `${rel}/${name}` : name))) return false;
    }
    return true;
  };
  return (await visit('')) ? out : undefined;
}

/** `+`: in no run id, task id or lane name, so a renewal's temporary directory is never taken for a worktree. */
const RENEW = '+renew-';

/** A directory made anew in place: a fresh inode (mode from the umask, the owner's), what is in it moved over. */
async function renewDir(dir: string, owner: { uid: number; gid: number }, mode: number): Promise<void> {
  const fresh = `${dir}${RENEW}${randomBytes(4).toString('hex')}`;
  await mkdir(fresh, { mode });
  if (process.getuid?.() === 0) await lchown(fresh, owner.uid, owner.gid);
  for (const name of await readdir(dir)) await rename(path.join(dir, name), path.join(fresh, name));
  await rmdir(dir);
  await rename(fresh, dir);
}

async function roomOnDisk(dir: string, s: PoolSettings): Promise<boolean> {
  const fs = await statfs(dir).catch(() => undefined);
  if (!fs) return false;
  const free = fs.bavail * fs.bsize;
  return free >= s.minFreeBytes && free >= s.minFreeRatio * fs.blocks * fs.bsize;
}

/**
 * "Now" as the file system's clock says it: the change time of a file written
 * there. A file changed after this has a change time at or after it, however
 * coarse the file system's timestamps are.
 */
export async function changeTimeNow(dir: string): Promise<number> {
  const probe = path.join(dir, `.now-${randomBytes(4).toString('hex')}`);
  await writeFile(probe, '');
  try {
    return (await lstat(probe)).ctimeMs;
  } finally {
    await rm(probe, { force: true });
  }
}

/**
 * What a give-back cut short may have left beside the worktree: the
 * temporary directory its top level was being made anew in (holding some or
 * all of the worktree's entries). Recovery removes these with the worktree.
 */
export async function renewalsOf(worktree: string): Promise<string[]> {
  const prefix = `${path.basename(worktree)}${RENEW}`;
  const names = await readdir(path.dirname(worktree)).catch(() => [] as string[]);
  return names.filter((n) => n.startsWith(prefix) && /^[0-9a-f]{8}$/.test(n.slice(prefix.length))).map((n) => path.join(path.dirname(worktree), n));
}
