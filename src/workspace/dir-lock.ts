/**
 * A lock that serializes runs on one workspace (a persistent directory, a task)
 * across processes. It lives in the runner home, not in the workspace, where a
 * step could remove it. A second run waits, saying so, or fails fast.
 */
import lockfile from 'proper-lockfile';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { CanceledError, WorkspaceError } from '../common/errors.js';

export interface LockWait {
  /** fail at once when held, rather than wait */
  noWait: boolean;
  signal: AbortSignal;
  /** told once when the lock is held by another run */
  onWait: (message: string) => void;
}

export async function lockWorkspace(locksDir: string, name: string, what: string, w: LockWait): Promise<() => Promise<void>> {
  await mkdir(locksDir, { recursive: true });
  const target = path.join(locksDir, name);
  await writeFile(target, '', { flag: 'a' });
  let told = false;
  for (;;) {
    try {
      return await lockfile.lock(target, {
        stale: 15_000,
        update: 5_000,
        realpath: false,
        onCompromised: (err) => process.emitWarning(`runner: the lock on ${what} was compromised: ${err.message}`),
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ELOCKED') throw err;
      if (w.noWait) {
        throw new WorkspaceError('workspace_busy', `${what} is in use by another run: wait for it, or run without --no-wait to queue`);
      }
      if (!told) {
        w.onWait(`${what} is in use by another run; waiting for it to finish (--no-wait to fail instead)`);
        told = true;
      }
      if (w.signal.aborted) throw new CanceledError(`canceled while waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 500));
    }
  }
}
