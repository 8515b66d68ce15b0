/**
 * What the scheduler does when a schedule entry fires, or when the server
 * starts after missing fires. Pure: the scheduler feeds it facts.
 */

export type Overlap = 'skip' | 'queue' | 'allow';

export type FireDecision =
  | { action: 'start' }
  | { action: 'queue' }
  | { action: 'skip'; reason: string };

/**
 * `running`: runs of this pipeline going now; `queued`: runs of it waiting.
 * skip: a fire while a run goes is dropped; queue: it waits (at most one
 * waits per pipeline: fires pile up into one run, not a storm); allow: it starts.
 */
export function decideFire(overlap: Overlap, running: number, queued: number): FireDecision {
  if (running === 0 && queued === 0) return { action: 'start' };
  if (overlap === 'allow') return { action: 'start' };
  if (overlap === 'queue') return queued > 0 ? { action: 'skip', reason: 'a run of it is already queued' } : { action: 'queue' };
  return { action: 'skip', reason: 'its previous run is still going (overlap: skip)' };
}

/**
 * After the server was down: with `catchup`, one run when at least one fire
 * was missed since the last one recorded; without, none.
 */
export function catchUp(catchup: boolean, missedSince: (from: Date, to: Date) => boolean, lastFire: Date | undefined, now: Date): boolean {
  return catchup && lastFire !== undefined && missedSince(lastFire, now);
}

/** Runs that may start now under a global cap, oldest first. Pure. */
export function admit<T>(waiting: readonly T[], running: number, maxConcurrent: number): { start: T[]; wait: T[] } {
  const room = Math.max(0, maxConcurrent - running);
  return { start: waiting.slice(0, room), wait: waiting.slice(room) };
}
