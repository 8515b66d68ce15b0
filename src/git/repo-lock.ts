/**
 * Serializes git operations on one repository across processes (and runner
 * homes), so two runs on one repository never meet an `index.lock` or
 * `packed-refs.lock` error. A kernel lock named after the repository's
 * common git directory: released when its holder exits, never taken over.
 */
import { realpath } from 'node:fs/promises';
import { waitLock } from '../common/kernel-lock.js';

export async function withRepoLock<T>(commonDir: string, fn: () => Promise<T>): Promise<T> {
  const key = await realpath(commonDir).catch(() => commonDir);
  const held = await waitLock('repo', key, { pollMs: 25 });
  try {
    return await fn();
  } finally {
    await held.release();
  }
}
