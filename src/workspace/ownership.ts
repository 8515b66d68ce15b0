/**
 * Gives a tree to a uid:gid and makes it readable and writable by its owner,
 * never following a symlink. Used before a step runs as a user other than
 * the project's owner, and before host git (running as the owner) reads what
 * a step left: a step that made its files unreadable must not make its work
 * impossible to commit. With removeSpecial, FIFOs, sockets and devices go.
 */
import { chmod, lchown, lstat, readdir, rm } from 'node:fs/promises';
import path from 'node:path';

const isRoot = () => process.getuid?.() === 0;

export async function handOver(
  root: string,
  uid: number,
  gid: number,
  opts: { recursive: boolean; skip?: string[]; removeSpecial?: boolean },
): Promise<void> {
  const skip = new Set(opts.skip ?? []);
  const visit = async (p: string, depth: number): Promise<void> => {
    const st = await lstat(p).catch(() => undefined);
    if (!st) return;
    // FIFOs, sockets and devices cannot be committed, and a FIFO named
    // .gitignore (or a nested .git/HEAD) would block host git forever.
    if (opts.removeSpecial && !st.isFile() && !st.isDirectory() && !st.isSymbolicLink()) {
      await rm(p, { force: true }).catch(() => undefined);
      return;
    }
    if ((st.uid !== uid || st.gid !== gid) && isRoot()) await lchown(p, uid, gid).catch(() => undefined);
    if (st.isSymbolicLink()) return;
    const want = st.isDirectory() ? 0o700 : st.isFile() ? 0o600 : 0;
    if (want && (st.mode & want) !== want && (st.uid === process.getuid?.() || isRoot())) {
      await chmod(p, (st.mode & 0o7777) | want).catch(() => undefined);
    }
    if (!st.isDirectory() || !opts.recursive) return;
    for (const name of await readdir(p).catch(() => [] as string[])) {
      if (depth === 0 && skip.has(name)) continue;
      await visit(path.join(p, name), depth + 1);
    }
  };
  await visit(root, 0);
}
