/**
 * Prepares a tree for its next reader, never following a symlink:
 * gives every entry to a uid:gid, makes it readable and writable by that
 * owner, and strips setuid, setgid and sticky bits (a step must not leave a
 * setuid program that the hand-over would give to root). Used before a step
 * runs as a user other than the project's owner, and before host git (as the
 * owner) reads what a step left: a step that made its files unreadable must
 * not make its work impossible to commit.
 *
 * With `forGit`, it also removes what host git must never meet: FIFOs,
 * sockets and devices (git cannot store them, and a FIFO named .gitignore
 * blocks it), and nested `.git` entries (a repository or gitfile a step made
 * would have host git run that repository's config, or read a host
 * repository it points to; its files are then committed as plain files).
 */
import { chmod, lchown, lstat, readdir } from 'node:fs/promises';
import type { Stats } from 'node:fs';
import { removeTree } from './remove-tree.js';

export interface HandOverReport {
  /** relative paths removed because git must not meet them (bytes: a step's names need not be UTF-8) */
  removed: Buffer[];
  /** relative paths `uid` still cannot read (a directory it cannot open, a file it cannot read): the hand-over could not change them */
  unreadable: Buffer[];
}

const isRoot = () => process.getuid?.() === 0;
const SLASH = Buffer.from('/');
const DOT_GIT = Buffer.from('.git');

/**
 * Names are read as bytes and paths joined as bytes: a name that is not
 * UTF-8 (`d\xff`) decoded to a string would name nothing, and the entry
 * (and all under it) would be passed over, left unreadable to git.
 */
export async function handOver(
  root: string,
  uid: number,
  gid: number,
  opts: { recursive: boolean; skip?: string[]; forGit?: boolean },
): Promise<HandOverReport> {
  const skip = (opts.skip ?? []).map((n) => Buffer.from(n));
  const report: HandOverReport = { removed: [], unreadable: [] };
  const rootBytes = Buffer.from(root);
  const visit = async (p: Buffer, rel: Buffer, depth: number): Promise<void> => {
    const st = await lstat(p).catch(() => undefined);
    if (!st) return;
    if (opts.forGit && depth > 0) {
      const special = !st.isFile() && !st.isDirectory() && !st.isSymbolicLink();
      if (special || baseName(rel).equals(DOT_GIT)) {
        await removeTree(p).catch(() => undefined);
        report.removed.push(rel);
        return;
      }
    }
    // what the entry is once handed over: its owner and mode as given, or as they were where that failed
    let owner = { uid: st.uid, gid: st.gid };
    let modeNow = st.mode;
    if ((st.uid !== uid || st.gid !== gid) && isRoot()) await lchown(p, uid, gid).then(() => (owner = { uid, gid }), () => undefined);
    if (st.isSymbolicLink()) return;
    const want = st.isDirectory() ? 0o700 : st.isFile() ? 0o600 : 0;
    const mode = (st.mode & 0o777) | want;
    if (mode !== (st.mode & 0o7777) && (st.uid === process.getuid?.() || isRoot())) {
      await chmod(p, mode).then(() => (modeNow = (st.mode & ~0o7777) | mode), () => undefined);
    }
    // What git's user still cannot read (the hand-over was refused: an immutable entry, another owner's) is said, never passed over.
    if (opts.forGit && depth > 0 && !permits({ mode: modeNow, ...owner, isDirectory: () => st.isDirectory() }, uid, gid)) {
      report.unreadable.push(rel);
      return;
    }
    if (!st.isDirectory() || !opts.recursive) return;
    for (const name of await readdir(p, { encoding: 'buffer' }).catch(() => [] as Buffer[])) {
      if (depth === 0 && skip.some((s) => s.equals(name))) continue;
      await visit(Buffer.concat([p, SLASH, name]), depth === 0 ? name : Buffer.concat([rel, SLASH, name]), depth + 1);
    }
  };
  await visit(rootBytes, Buffer.alloc(0), 0);
  return report;
}

function baseName(rel: Buffer): Buffer {
  return rel.subarray(rel.lastIndexOf(0x2f) + 1);
}

/** Whether uid:gid may read the entry (and, a directory, list and enter it), by its mode bits. Pure. */
export function permits(st: Pick<Stats, 'mode' | 'uid' | 'gid' | 'isDirectory'>, uid: number, gid: number): boolean {
  if (uid === 0) return true;
  const bits = st.uid === uid ? (st.mode >> 6) & 7 : st.gid === gid ? (st.mode >> 3) & 7 : st.mode & 7;
  return st.isDirectory() ? (bits & 5) === 5 : (bits & 4) === 4;
}
