/**
 * A lock that serializes runs on one workspace (a persistent directory, a
 * task) across processes: a kernel lock (common/kernel-lock.ts), so a paused
 * runner keeps it and a dead one frees it at once. Nothing is written in the
 * workspace, where a step could remove it. A second run waits, saying so, or
 * fails fast.
 */
import { CanceledError, WorkspaceError } from '../common/errors.js';
import { tryLock, waitLock } from '../common/kernel-lock.js';

export interface LockWait {
  /** fail at once when held, rather than wait */
  noWait: boolean;
  signal: AbortSignal;
  /** told once when the lock is held by another run */
  onWait: (message: string) => void;
}

/** `key` names the workspace (a resolved path, or home + task id); `what` is for messages. */
export async function lockWorkspace(key: string, what: string, w: LockWait): Promise<() => Promise<void>> {
  if (w.noWait) {
    const held = await tryLock('workspace', key);
    if (!held) throw new WorkspaceError('workspace_busy', `${what} is in use by another run: wait for it, or run without --no-wait to queue`);
    return () => held.release();
  }
  const held = await waitLock('workspace', key, {
    signal: w.signal,
    pollMs: 500,
    onWait: () => w.onWait(`${what} is in use by another run; waiting for it to finish (--no-wait to fail instead)`),
    abort: () => new CanceledError(`canceled while waiting for ${what}`),
  });
  return () => held.release();
}
