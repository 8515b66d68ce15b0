/**
 * Tells a live run from a dead one without guessing from timestamps: a live
 * run holds a kernel lock named after its runner home and run id, released
 * the moment its process dies (see common/kernel-lock.ts).
 */
import { isLocked, tryLock, waitLock, type HeldLock } from '../common/kernel-lock.js';

const key = (home: string, runId: string) => `${home}\n${runId}`;

/** Held for the life of the run. */
export async function holdOwnerLock(home: string, runId: string): Promise<HeldLock> {
  const held = await tryLock('run', key(home, runId));
  if (!held) throw new Error(`run ${runId} is already owned by another process`);
  return held;
}

/** Taken by recovery, so that two recovering processes never recover one run twice. */
export function tryOwnerLock(home: string, runId: string): Promise<HeldLock | undefined> {
  return tryLock('run', key(home, runId));
}

/** True while some process holds the run's owner lock. */
export function ownerAlive(home: string, runId: string): Promise<boolean> {
  return isLocked('run', key(home, runId));
}

/**
 * Runs `fn` holding the run's lock: how a run's directory and its first
 * record are written by anyone but the run itself (runner serve accepting a
 * trigger), so recovery never takes a directory being made for one left by a crash.
 */
export async function withOwnerLock<T>(home: string, runId: string, fn: () => Promise<T>, timedOut?: () => Error): Promise<T> {
  const signal = AbortSignal.timeout(10_000);
  const held = await waitLock('run', key(home, runId), {
    signal,
    pollMs: 50,
    abort: timedOut ?? (() => new Error(`run ${runId} stayed locked by another process for 10 s: its record was not written`)),
  });
  try {
    return await fn();
  } finally {
    await held.release();
  }
}
