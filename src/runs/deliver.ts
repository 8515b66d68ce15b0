/**
 * Merge and apply, as every door asks for them, with the checks in front of
 * them: the id is a run id, the branch to merge into is a branch name (for
 * the CLI, the guard of mergeRun, recorded as a refused attempt), the run
 * is the door's (scope.ts) and not one it still holds queued or starting; then
 * delivery/deliver.ts, whose guards (the run succeeded, verified, in its
 * paths, a clean checkout) and record keeping are the same for all.
 */
import { RunnerError } from '../common/errors.js';
import { branchNameProblem } from '../delivery/branch-name.js';
import { applyRunById, mergeRunById, type MergeRequest } from '../delivery/deliver.js';
import type { MergeResult } from '../delivery/merge.js';
import type { DeliveredBy, RunRecord } from '../run/record.js';
import { RunnerHome } from '../workspace/home.js';
import type { Door } from './door.js';
import { ranRecord } from './show.js';

/** Merges the run's branch into its project (`into`, default the branch it started from). */
export async function mergeRunOf(door: Door, id: string, req: MergeRequest, by: DeliveredBy): Promise<MergeResult & { rec: RunRecord }> {
  if (req.into !== undefined && !door.recordsBadTargets) {
    const bad = branchNameProblem(req.into);
    if (bad) throw new RunnerError('bad_request', `"into" must be a branch name: ${bad}`);
  }
  await ranRecord(door, id);
  return mergeRunById(new RunnerHome(door.home), id, req, by);
}

/** Writes the run's change into its project's checkout, uncommitted. */
export async function applyRunOf(door: Door, id: string, by: DeliveredBy): Promise<{ files: string[]; rec: RunRecord }> {
  await ranRecord(door, id);
  return applyRunById(new RunnerHome(door.home), id, by);
}
