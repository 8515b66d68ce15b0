/**
 * The delivery preview (GET /api/runs/:id/delivery, MCP's delivery_preview):
 * what a person is asked to confirm before a merge or an apply. Where the run's work would go (its
 * project, the branch checked out there, the branches it could be merged
 * into) and whether it can be delivered at all, with why not. The guards that
 * need only the record and git's objects are checked here; every guard is
 * checked again, afresh, by the delivery itself.
 */
import { errorMessage } from '../common/errors.js';
import { changedPaths, checkClean, checkRecorded, checkScope, checkVerification } from '../delivery/guards.js';
import { currentBranch } from '../delivery/merge.js';
import { deliverySource, type DeliverySource } from '../delivery/source.js';
import type { RunRecord } from '../run/record.js';
import type { Door } from './door.js';
import { showRun } from './show.js';

export interface DeliveryView {
  project: string;
  branch: string | null;
  /** the branch checked out in the project; null when HEAD is detached or the project cannot be read */
  currentBranch: string | null;
  /** the project's local branches, runs' own branches (run/...) left out */
  branches: string[];
  /** those of them that already hold the run's work (a merge into one is refused: nothing to merge) */
  mergedInto: string[];
  deliverable: boolean;
  /** why not, when not deliverable */
  why?: string;
  /** the project's checkout has uncommitted changes: an apply, or a merge into the branch checked out, would be refused */
  checkoutDirty: boolean;
  /** the last delivery that was done, as the record has it */
  delivered: RunRecord['delivered'];
  /** why a merge has nowhere to go (every branch holds the run's work already), when so: the doors offer no Merge */
  mergeWhy?: string;
  /** why an apply has nothing to bring (the branch checked out holds the run's work already), when so: the doors offer no Apply */
  applyWhy?: string;
}

/** At most so many branches are listed: a repository with thousands is offered the first ones by name. */
const MAX_BRANCHES = 500;

export async function deliveryView(rec: RunRecord): Promise<DeliveryView> {
  const view: DeliveryView = { project: rec.project, branch: rec.branch, currentBranch: null, branches: [], mergedInto: [], deliverable: false, checkoutDirty: false, delivered: rec.delivered ?? null };
  let src: DeliverySource;
  try {
    src = await deliverySource(rec);
  } catch (err) {
    return { ...view, why: errorMessage(err) };
  }
  const { git, project } = src;
  view.currentBranch = (await currentBranch(git, project)) ?? null;
  const refs = await git.out(['for-each-ref', '--format=%(refname:short)', 'refs/heads/'], { cwd: project.root, gitDir: project.commonDir });
  view.branches = refs
    .split('\n')
    .filter((b) => b && !b.startsWith('run/'))
    .slice(0, MAX_BRANCHES);
  const holding = await git.run(['for-each-ref', '--contains', src.head, '--format=%(refname:short)', 'refs/heads/'], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
  const listed = new Set(view.branches);
  view.mergedInto = holding.code === 0 ? holding.stdout.split('\n').filter((b) => listed.has(b)) : [];
  view.checkoutDirty = await checkClean(git, project).then(
    () => false,
    () => true,
  );
  try {
    checkVerification(rec);
    checkRecorded(rec);
    checkScope(rec, await changedPaths(git, project, src.base, src.head));
  } catch (err) {
    return { ...view, why: errorMessage(err) };
  }
  return { ...view, deliverable: true, ...offers(view) };
}

/** What a delivery could still do, from the branches that hold the run's work. Pure. */
export function offers(v: Pick<DeliveryView, 'branches' | 'mergedInto' | 'currentBranch'>): { mergeWhy?: string; applyWhy?: string } {
  const out: { mergeWhy?: string; applyWhy?: string } = {};
  if (v.branches.length > 0 && v.branches.every((b) => v.mergedInto.includes(b))) out.mergeWhy = `every branch of the project (${v.branches.slice(0, 5).join(', ')}${v.branches.length > 5 ? ', …' : ''}) holds this run's work already: there is nothing to merge`;
  if (v.currentBranch !== null && v.mergedInto.includes(v.currentBranch)) out.applyWhy = `the branch checked out, ${v.currentBranch}, holds this run's work already: there is nothing to apply`;
  return out;
}

/** What a merge or an apply of the run would do (delivery_preview, GET /api/runs/:id/delivery); a run the door still holds has not run yet. */
export async function previewDelivery(door: Door, id: string): Promise<DeliveryView | { runId: string; status: string; deliverable: false; why: string }> {
  const r = await showRun(door, id);
  if (!('steps' in r)) return { runId: id, status: r.status, deliverable: false, why: 'it has not run yet' };
  return deliveryView(r);
}
