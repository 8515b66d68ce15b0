/**
 * A `runner exec` waiting in the foreground at a run's gate holds this lock
 * while it waits: a door that takes an approval leaves the run to it (it goes
 * on in the terminal that started it), and continues the run itself only when
 * nobody waits (the waiter gave up, or the run was started by a server).
 */
import { isLocked, tryLock, type HeldLock } from '../common/kernel-lock.js';

const key = (home: string, runId: string) => `${home}\n${runId}`;

export function holdGateWaiter(home: string, runId: string): Promise<HeldLock | undefined> {
  return tryLock('gate-waiter', key(home, runId));
}

export function gateWaiterAlive(home: string, runId: string): Promise<boolean> {
  return isLocked('gate-waiter', key(home, runId));
}
