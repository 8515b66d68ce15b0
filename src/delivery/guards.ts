/**
 * The guards of delivery, each checked afresh at decision time against the
 * repository as it is now. The pure parts (verification, scope) are separate
 * from the ones that ask git.
 */
import picomatch from 'picomatch';
import { visible } from '../common/visible.js';
import type { Git, GitCall } from '../git/git.js';
import type { RunRecord } from '../run/record.js';
import { resultName, workNotRecorded } from '../run/step-result.js';
import type { ProjectFacts } from '../workspace/project.js';
import { DeliveryRefused } from './refusal.js';

/** Every step marked `verify: true` must have completed in this run. Pure. */
export function checkVerification(rec: RunRecord): void {
  const failed = rec.deliveryRules.verifySteps.filter((id) => rec.steps.find((s) => s.id === id)?.status !== 'completed');
  if (failed.length) {
    throw new DeliveryRefused(
      'verification_failed',
      `step${failed.length > 1 ? 's' : ''} ${failed.join(', ')} (verify: true) did not pass in run ${rec.runId}: fix the cause and run the pipeline again`,
      failed,
    );
  }
}

/**
 * The run's branch holds all its steps' work: a step whose work is on no
 * commit (only in its kept workspace, or saved as a patch) makes the branch a
 * part of the run, never delivered as if it were the whole. Pure.
 */
export function checkRecorded(rec: RunRecord): void {
  const missing = rec.steps.filter((s) => workNotRecorded(s) || s.patch);
  if (!missing.length) return;
  const where = missing.map((s) => `${resultName(s)} (${s.patch ? `saved in ${s.patch}` : `left in the workspace${rec.keptWorkspace && rec.worktree ? ` ${rec.worktree}` : ''}`})`);
  throw new DeliveryRefused(
    'work_not_recorded',
    `run ${rec.runId}'s branch does not hold all its work: not on it is work of step${missing.length > 1 ? 's' : ''} ${where.join(', ')}; bring that work into a run you can deliver, or merge ${rec.branch ?? 'the branch'} with git yourself knowing it is partial`,
    missing.map((s) => resultName(s)),
  );
}

/** Every changed path must match one of delivery.paths, when the pipeline has them. Pure. */
export function checkScope(rec: RunRecord, changedPaths: string[]): void {
  const globs = rec.deliveryRules.paths;
  if (!globs) return;
  const allowed = picomatch(globs, { dot: true });
  const outside = changedPaths.filter((p) => !allowed(p));
  if (outside.length) {
    throw new DeliveryRefused(
      'scope_violation',
      `the change touches paths outside delivery.paths (${globs.join(', ')}): ${outside.slice(0, 10).map(visible).join(', ')}${outside.length > 10 ? ` and ${outside.length - 10} more` : ''}; review the run's diff (runner diff ${rec.runId})`,
      outside,
    );
  }
}

export async function changedPaths(git: Git, project: ProjectFacts, from: string, to: string): Promise<string[]> {
  const out = (await git.run(['diff', '--name-only', '--no-renames', '-z', from, to], { cwd: project.root, gitDir: project.commonDir })).stdout;
  return out.split('\0').filter(Boolean);
}

/** The project's checkout has no uncommitted changes to tracked files. */
export async function checkClean(git: Git, project: ProjectFacts): Promise<void> {
  const call: GitCall = { cwd: project.root, gitDir: project.commonDir, workTree: project.root };
  const status = (await git.run(['status', '--porcelain=v1', '--untracked-files=no', '-z'], call)).stdout;
  const dirty = status
    .split('\0')
    .filter(Boolean)
    .map((l) => l.slice(3));
  if (dirty.length) {
    throw new DeliveryRefused(
      'target_dirty',
      `the project ${project.root} has uncommitted changes: ${dirty.slice(0, 10).join(', ')}${dirty.length > 10 ? ` and ${dirty.length - 10} more` : ''}; commit or stash them, then try again`,
      dirty,
    );
  }
}
