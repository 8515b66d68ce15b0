/**
 * Tells a live run from a dead one without guessing from timestamps: a live
 * run holds a kernel lock named after its runner home and run id, released
 * the moment its process dies (see common/kernel-lock.ts).
 */
import { isLocked, tryLock, type HeldLock } from '../common/kernel-lock.js';

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
