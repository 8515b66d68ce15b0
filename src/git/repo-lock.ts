/**
 * Serializes git operations on one repository across processes, so two runs
 * on one repository never meet an `index.lock` or `packed-refs.lock` error.
 * The lock lives in the repository's common git directory; proper-lockfile
 * refreshes it while held and takes over a lock left by a crashed process.
 */
import lockfile from 'proper-lockfile';
import path from 'node:path';
import { GitError } from '../common/errors.js';

export async function withRepoLock<T>(commonDir: string, fn: () => Promise<T>): Promise<T> {
  const lockPath = path.join(commonDir, 'runner.lock');
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(commonDir, {
      lockfilePath: lockPath,
      realpath: false,
      stale: 15_000,
      update: 5_000,
      retries: { retries: 600, factor: 1, minTimeout: 50, maxTimeout: 200, randomize: true },
      // The default throws from a timer and would crash the run before its cleanup.
      onCompromised: (err) => process.emitWarning(`runner: the git lock on ${commonDir} was compromised: ${err.message}`),
    });
  } catch (err) {
    throw new GitError(
      'repo_locked',
      `could not lock ${commonDir} for git (${(err as Error).message}): another runner holds ${lockPath}; wait, or remove it if no runner is running`,
      { cause: err },
    );
  }
  try {
    return await fn();
  } finally {
    await release().catch(() => undefined);
  }
}
