/**
 * A delivery as one operation, the same for `runner merge`/`runner apply` and
 * the HTTP API: read the run's record, deliver through the guarded mergeRun or
 * applyRun, and write the attempt into the record (done or refused, by whom,
 * when). The record is read, changed and written holding the run's owner
 * lock: a runner serve and a CLI on one home never overwrite each other's
 * entry, two deliveries of one run go one after the other, and a run still
 * alive (its process holds the lock) is never written under it.
 */
import { clip } from '../common/clip.js';
import { errorMessage } from '../common/errors.js';
import type { DeliveredBy, DeliveryAttempt, RunRecord } from '../run/record.js';
import { withOwnerLock } from '../run/owner-lock.js';
import { readRun, writeRun } from '../run/records.js';
import { RunnerHome } from '../workspace/home.js';
import { applyRun } from './apply.js';
import { mergeRun, type MergeResult } from './merge.js';
import { DeliveryRefused } from './refusal.js';
import { checkOver, deliverySource } from './source.js';

export interface MergeRequest {
  into?: string | undefined;
  squash: boolean;
  /** merge even when the run brings no change to the target (its change is there already): recorded as a merge all the same */
  allowEmpty?: boolean | undefined;
}

/** The entry an attempt leaves in the record: what was asked and what came of it. Pure. */
export function attemptEntry(
  action: 'merge' | 'apply',
  by: DeliveredBy,
  at: Date,
  asked: Partial<MergeRequest>,
  outcome: { ok: true; into?: string; commit?: string } | { ok: false; error: unknown },
): DeliveryAttempt {
  const e: DeliveryAttempt = { action, at: at.toISOString(), by, ok: outcome.ok };
  const into = outcome.ok ? (outcome.into ?? asked.into) : asked.into;
  if (into) e.into = into;
  if (action === 'merge') e.squash = asked.squash === true;
  if (outcome.ok) {
    if (outcome.commit) e.commit = outcome.commit;
  } else {
    if (outcome.error instanceof DeliveryRefused) e.refused = outcome.error.reason;
    e.message = clip(errorMessage(outcome.error), MAX_MESSAGE);
  }
  return e;
}

/** An attempt's message is kept up to so many characters: git can be made to say a lot about a step's files. */
export const MAX_MESSAGE = 2000;
/** Failed attempts kept in a record, the newest: anyone who may call the API could otherwise grow it without end. */
export const MAX_FAILED_KEPT = 50;

/**
 * The record's deliveries with `entry` added: every delivery that was done is
 * kept (each one changed the project, and a run is merged or applied a few
 * times at most); of those refused or failed, the newest MAX_FAILED_KEPT. Pure.
 */
export function withAttempt(list: readonly DeliveryAttempt[], entry: DeliveryAttempt): DeliveryAttempt[] {
  const all = [...list, entry];
  let failed = all.filter((e) => !e.ok).length;
  return all.filter((e) => e.ok || failed-- <= MAX_FAILED_KEPT);
}

/** Merges run `runId` (runner merge); the record gains the attempt, and `delivered` when it merged. Throws DeliveryRefused as mergeRun does. */
export async function mergeRunById(home: RunnerHome, runId: string, req: MergeRequest, by: DeliveredBy): Promise<MergeResult & { rec: RunRecord }> {
  return attempt(home, runId, 'merge', req, by, async (rec) => {
    const r = await mergeRun(await deliverySource(rec), { ...(req.into ? { into: req.into } : {}), squash: req.squash, allowEmpty: req.allowEmpty === true, scratchRoot: home.merges });
    rec.delivered = { how: 'merge', at: new Date().toISOString(), into: r.into, commit: r.commit };
    return { result: r, into: r.into, commit: r.commit };
  });
}

/** Applies run `runId` to its project's checkout (runner apply); the record gains the attempt, and `delivered` when it applied. */
export async function applyRunById(home: RunnerHome, runId: string, by: DeliveredBy): Promise<{ files: string[]; rec: RunRecord }> {
  return attempt(home, runId, 'apply', {}, by, async (rec) => {
    const r = await applyRun(await deliverySource(rec), home.runs);
    rec.delivered = { how: 'apply', at: new Date().toISOString() };
    return { result: r };
  });
}

async function attempt<T extends object>(
  home: RunnerHome,
  runId: string,
  action: 'merge' | 'apply',
  asked: Partial<MergeRequest>,
  by: DeliveredBy,
  deliver: (rec: RunRecord) => Promise<{ result: T; into?: string; commit?: string }>,
): Promise<T & { rec: RunRecord }> {
  // An unknown run is an error before the lock: there is no record to write to. A run still going on is
  // refused without an entry: its record is its own process's while it lives (and rewritten by it).
  checkOver(await readRun(home.runs, runId));
  const busy = () =>
    new DeliveryRefused('not_deliverable', `run ${runId} is held by another process (its runner finishing it, or another delivery) for 10 s: try again in a moment`);
  return withOwnerLock(home.root, runId, async () => {
    const rec = await readRun(home.runs, runId); // read again, holding the lock: what the record is now
    let done: { result: T; into?: string; commit?: string };
    try {
      done = await deliver(rec);
    } catch (err) {
      // The attempt is recorded; a record that cannot be written does not hide why the delivery failed.
      const entry = attemptEntry(action, by, new Date(), asked, { ok: false, error: err });
      await writeRun(home.runs, { ...rec, deliveries: withAttempt(rec.deliveries ?? [], entry) }).catch(() => undefined);
      throw err;
    }
    const entry = attemptEntry(action, by, new Date(), asked, { ok: true, ...(done.into ? { into: done.into } : {}), ...(done.commit ? { commit: done.commit } : {}) });
    rec.deliveries = withAttempt(rec.deliveries ?? [], entry);
    await writeRun(home.runs, rec);
    return { ...done.result, rec };
  }, busy);
}
