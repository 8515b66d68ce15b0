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
import path from 'node:path';
import { removeTree } from './remove-tree.js';

export interface HandOverReport {
  /** relative paths removed because git must not meet them */
  removed: string[];
}

const isRoot = () => process.getuid?.() === 0;

export async function handOver(
  root: string,
  uid: number,
  gid: number,
  opts: { recursive: boolean; skip?: string[]; forGit?: boolean },
): Promise<HandOverReport> {
  const skip = new Set(opts.skip ?? []);
  const report: HandOverReport = { removed: [] };
  const visit = async (p: string, depth: number): Promise<void> => {
    const st = await lstat(p).catch(() => undefined);
    if (!st) return;
    const rel = path.relative(root, p);
    if (opts.forGit && depth > 0) {
      const special = !st.isFile() && !st.isDirectory() && !st.isSymbolicLink();
      if (special || path.basename(p) === '.git') {
        await removeTree(p).catch(() => undefined);
        report.removed.push(rel);
        return;
      }
    }
    if ((st.uid !== uid || st.gid !== gid) && isRoot()) await lchown(p, uid, gid).catch(() => undefined);
    if (st.isSymbolicLink()) return;
    const want = st.isDirectory() ? 0o700 : st.isFile() ? 0o600 : 0;
    const mode = (st.mode & 0o777) | want;
    if (mode !== (st.mode & 0o7777) && (st.uid === process.getuid?.() || isRoot())) {
      await chmod(p, mode).catch(() => undefined);
    }
    if (!st.isDirectory() || !opts.recursive) return;
    for (const name of await readdir(p).catch(() => [] as string[])) {
      if (depth === 0 && skip.has(name)) continue;
      await visit(path.join(p, name), depth + 1);
    }
  };
  await visit(root, 0);
  return report;
}
