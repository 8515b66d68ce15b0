/**
 * Removes a tree a step made, whatever it made: paths far beyond PATH_MAX,
 * directories it made unreadable (chmod 000), a million files. Node's rm
 * walks by whole paths and fails with ENAMETOOLONG on a deep tree; GNU rm
 * walks with directory descriptors (fts, openat), so depth is no limit, and
 * never follows a symlink. As root it needs no permission; otherwise the
 * tree's directories are first given u+rwx by GNU chmod, which walks the same
 * way and ignores symlinks met on the way.
 */
import { execFile } from 'node:child_process';
import { lstat, rm, unlink } from 'node:fs/promises';
import { WorkspaceError } from '../common/errors.js';

const TIMEOUT_MS = 10 * 60_000;

function run(cmd: string, args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(cmd, args, { timeout: TIMEOUT_MS, maxBuffer: 1024 * 1024, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', LC_ALL: 'C' } }, (err, _out, stderr) => {
      const code = err ? (typeof (err as NodeJS.ErrnoException).code === 'number' ? Number((err as NodeJS.ErrnoException).code) : 1) : 0;
      resolve({ code, stderr: String(stderr) });
    });
  });
}

/** `dir` as bytes when a step named it with bytes that are not UTF-8 (no argv carries those: Node's own rm then). */
export async function removeTree(dir: string | Buffer): Promise<void> {
  if (Buffer.isBuffer(dir)) {
    const text = dir.toString('utf8');
    if (Buffer.from(text).equals(dir)) return removeTree(text);
    await rm(dir, { recursive: true, force: true }).catch((err: NodeJS.ErrnoException) => {
      throw new WorkspaceError('remove_failed', `could not remove ${JSON.stringify(text)} (${err.code}): remove it by hand`);
    });
    return;
  }
  // What is not a directory (a symlink named .git, say) is unlinked, never handed to chmod, which would follow it.
  const st = await lstat(dir).catch(() => undefined);
  if (!st) return;
  if (!st.isDirectory()) {
    await unlink(dir).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw new WorkspaceError('remove_failed', `could not remove ${dir} (${err.code}): remove it by hand`);
    });
    return;
  }
  if (process.getuid?.() !== 0) await run('chmod', ['-R', 'u+rwX', '--', dir]);
  const r = await run('rm', ['-rf', '--one-file-system', '--', dir]);
  if (r.code !== 0) {
    const said = r.stderr.trim().split('\n').slice(0, 3).join('; ').slice(0, 1000);
    throw new WorkspaceError('remove_failed', `could not remove ${dir} (rm exit ${r.code}): ${said}; remove it by hand with rm -rf`);
  }
}
