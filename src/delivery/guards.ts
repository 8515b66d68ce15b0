/**
 * The guards of delivery, each checked afresh at decision time against the
 * repository as it is now. The pure parts (verification, scope) are separate
 * from the ones that ask git.
 */
import { posix } from 'node:path';
import picomatch from 'picomatch';
import { visible } from '../common/visible.js';
import type { Git, GitCall } from '../git/git.js';
import type { RunRecord } from '../run/record.js';
import { parseRawDiff } from '../workspace/patch-file.js';
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

/** Every changed path must match one of delivery.paths, when the pipeline has them. Pure. */
export function checkScope(rec: RunRecord, changedPaths: string[]): void {
  const globs = rec.deliveryRules.paths;
  if (!globs) return;
  const allowed = picomatch(globs, { dot: true });
  const outside = changedPaths.filter((p) => !allowed(p));
  if (outside.length) {
    throw new DeliveryRefused(
      'scope_violation',
      `the change touches paths outside delivery.paths (${globs.join(', ')}): ${outside.slice(0, 10).join(', ')}${outside.length > 10 ? ` and ${outside.length - 10} more` : ''}; review the run's diff (runner diff ${rec.runId})`,
      outside,
    );
  }
}

/**
 * With delivery.paths, a symlink the change adds or alters must point inside
 * them: its target, taken relative to the link, may not be absolute, leave the
 * repository, reach into .git, or fall outside the paths (`src/gitdir -> ../.git`
 * and `src/x -> /etc/passwd` would otherwise land in the checkout). Pure.
 */
export function checkSymlinks(rec: RunRecord, links: Array<{ path: string; target: string }>): void {
  const globs = rec.deliveryRules.paths;
  if (!globs) return;
  const allowed = picomatch(globs, { dot: true });
  const escapes = links.filter(({ path: link, target }) => {
    if (target === '' || posix.isAbsolute(target)) return true;
    const to = posix.normalize(posix.join(posix.dirname(link), target));
    return to === '..' || to.startsWith('../') || to.split('/').includes('.git') || !allowed(to);
  });
  if (escapes.length) {
    const shown = escapes.slice(0, 10).map((l) => `${visible(l.path)} -> ${visible(l.target)}`);
    throw new DeliveryRefused(
      'scope_violation',
      `the change has symlinks that point outside delivery.paths (${globs.join(', ')}): ${shown.join(', ')}${escapes.length > 10 ? ` and ${escapes.length - 10} more` : ''}; review the run's diff (runner diff ${rec.runId})`,
      escapes.map((l) => l.path),
    );
  }
}

/** The symlinks the change adds or alters, with their targets, read from git's objects (never from a checkout). */
export async function changedSymlinks(git: Git, project: ProjectFacts, from: string, to: string): Promise<Array<{ path: string; target: string }>> {
  const call = { cwd: project.root, gitDir: project.commonDir };
  const raw = await git.run(['diff', '--raw', '-z', '--no-renames', '--no-abbrev', from, to], call);
  const links = parseRawDiff(raw.stdout).filter((c) => c.newMode === '120000');
  if (!links.length) return [];
  const out = Buffer.from((await git.run(['cat-file', '--batch'], { ...call, input: `${links.map((l) => l.newOid).join('\n')}\n` })).stdout, 'utf8');
  // "<oid> blob <size>\n<content>\n" each; a target that is not UTF-8 does not parse and stays '' (refused).
  const targets = new Map<string, string>();
  for (let at = 0; at < out.length; ) {
    const nl = out.indexOf(0x0a, at);
    if (nl < 0) break;
    const [oid, type, size] = out.subarray(at, nl).toString('utf8').split(' ');
    const n = Number(size);
    if (type !== 'blob' || !Number.isInteger(n) || out[nl + 1 + n] !== 0x0a) break;
    targets.set(oid!, out.subarray(nl + 1, nl + 1 + n).toString('utf8'));
    at = nl + 1 + n + 1;
  }
  return links.map((l) => ({ path: l.path, target: targets.get(l.newOid) ?? '' }));
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
