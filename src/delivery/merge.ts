/**
 * `runner merge RUN_ID [--into BRANCH] [--squash] [--push]`: the run branch is
 * merged in a temporary detached worktree (never in the user's checkout), the
 * result committed, and the target branch moved to it only if it has not moved
 * meanwhile. When the target is the branch checked out in the project (clean,
 * by the target_dirty guard), the checkout is fast-forwarded with it, so the
 * working tree and index match. The temporary worktree is always removed.
 */
import { chown, mkdir, mkdtemp } from 'node:fs/promises';
import path from 'node:path';
import { visible } from '../common/visible.js';
import { configuredIdentity } from '../git/configured-identity.js';
import { filtersOff, RUNNER_IDENTITY, type Git, type GitCall, type GitPerson } from '../git/git.js';
import { withRepoLock } from '../git/repo-lock.js';
import { repositoryFilters } from '../workspace/git-worktree.js';
import type { ProjectFacts } from '../workspace/project.js';
import { removeTree } from '../workspace/remove-tree.js';
import { changedPaths, checkClean, checkRecorded, checkScope, checkVerification } from './guards.js';
import { guardSymlinks } from './symlinks.js';
import { branchNameProblem } from './branch-name.js';
import { DeliveryRefused } from './refusal.js';
import type { DeliverySource } from './source.js';

export interface MergeOptions {
  into?: string;
  squash: boolean;
  /** a merge that changes nothing in the target is made anyway (else refused, saying so) */
  allowEmpty?: boolean;
  scratchRoot: string;
}

export interface MergeResult {
  into: string;
  commit: string;
  movedCheckout: boolean;
  /** who the merge commit names: the project's configured identity, or the runner's when git has none there */
  author: GitPerson & { configured: boolean };
}

export async function currentBranch(git: Git, project: ProjectFacts): Promise<string | undefined> {
  const r = await git.run(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
  return r.code === 0 ? r.stdout.trim() : undefined;
}

/** A worktree other than the project's own checkout that has `ref` checked out. */
async function checkedOutElsewhere(git: Git, project: ProjectFacts, ref: string): Promise<string | undefined> {
  const list = await git.out(['worktree', 'list', '--porcelain'], { cwd: project.root, gitDir: project.commonDir });
  let current = '';
  for (const line of list.split('\n')) {
    if (line.startsWith('worktree ')) current = line.slice('worktree '.length);
    else if (line === `branch ${ref}` && path.resolve(current) !== project.root) return current;
  }
  return undefined;
}

export async function mergeRun(src: DeliverySource, o: MergeOptions): Promise<MergeResult> {
  const { git, project, rec } = src;
  const checkedOut = await currentBranch(git, project);
  const into = o.into ?? checkedOut;
  if (!into) throw new DeliveryRefused('not_deliverable', `the project's HEAD is detached: name the target with --into BRANCH`);
  const bad = branchNameProblem(into);
  if (bad) throw new DeliveryRefused('not_deliverable', `${visible(into)} is not a branch name (${bad}): name a branch of ${project.root}`);
  const target = `refs/heads/${into}`;
  const old = (await git.run(['rev-parse', '--verify', '--quiet', `${target}^{commit}`], { cwd: project.root, gitDir: project.commonDir, allowFail: true })).stdout.trim();
  if (!old) throw new DeliveryRefused('not_deliverable', `there is no branch ${into} in ${project.root}`);
  // Already merged (a second click, two callers at once): git would say "Already up to date" and succeed, and
  // the record would show a merge that did nothing.
  const contained = await git.run(['merge-base', '--is-ancestor', src.head, old], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
  if (contained.code === 0) throw new DeliveryRefused('not_deliverable', `${into} already holds run ${rec.runId}'s work (commit ${src.head.slice(0, 10)}): nothing to merge`);

  checkVerification(rec);
  checkRecorded(rec);
  checkScope(rec, await changedPaths(git, project, src.base, src.head));
  await guardSymlinks(git, project, rec, src.base, src.head);
  const movesCheckout = checkedOut === into;
  if (movesCheckout) await checkClean(git, project);
  const elsewhere = await checkedOutElsewhere(git, project, target);
  if (elsewhere) {
    throw new DeliveryRefused(
      'target_checked_out',
      `${into} is checked out in the worktree ${elsewhere}; moving it would leave that checkout behind its branch: merge into another branch, or check ${into} out in the project`,
    );
  }

  await mkdir(o.scratchRoot, { recursive: true });
  const scratch = await mkdtemp(path.join(o.scratchRoot, `merge-${rec.runId}-`));
  const tmp = path.join(scratch, 'worktree');
  // merge.renormalize would make git read .gitattributes from the merged tree, the step's own among them, so a
  // step could pick a merge driver (a command) the project's config defines and run it on the host: off. The
  // attributes of a merge are then those of the target's checkout.
  const config = [...filtersOff(await repositoryFilters(git, project)), 'diff.ignoreSubmodules=all', 'submodule.recurse=false', 'merge.renormalize=false'];
  try {
    await chown(scratch, project.uid, project.gid);
    await withRepoLock(project.commonDir, () =>
      git.run(['worktree', 'add', '--quiet', '--detach', tmp, old], { cwd: project.root, gitDir: project.commonDir, config }),
    );
    // the merge lands on the user's branch: it is theirs, named as a plain git merge there would name it
    const configured = await configuredIdentity(git, project);
    const author = configured ?? RUNNER_IDENTITY;
    const call: GitCall = { cwd: tmp, config, isolated: true, author };
    const subject = `${o.squash ? 'Squash-merge' : 'Merge'} ${rec.branch} (run ${rec.runId}, pipeline ${rec.pipeline})`;
    const merged = await git.run(
      o.squash ? ['merge', '--squash', '--no-verify', src.head] : ['merge', '--no-ff', '--no-verify', '-m', subject, src.head],
      { ...call, allowFail: true },
    );
    if (merged.code !== 0) {
      const conflicted = (await git.out(['diff', '--name-only', '--diff-filter=U'], call)).split('\n').filter(Boolean);
      if (conflicted.length) {
        throw new DeliveryRefused(
          'conflict',
          `merging ${rec.branch} into ${into} conflicts in ${conflicted.slice(0, 10).join(', ')}${conflicted.length > 10 ? ` and ${conflicted.length - 10} more` : ''}; ${into} is unchanged: resolve by hand (git merge ${rec.branch}) or run the pipeline again on the new ${into}`,
          conflicted,
        );
      }
      throw new DeliveryRefused('conflict', `merging ${rec.branch} into ${into} failed: ${merged.stderr.trim() || merged.stdout.trim()}`);
    }
    if (o.squash) {
      const staged = await git.run(['diff', '--cached', '--quiet'], { ...call, allowFail: true });
      if (staged.code === 0 && !o.allowEmpty) throw new DeliveryRefused('not_deliverable', noChange(rec.branch, into));
      await git.run(['commit', '--quiet', '--no-verify', ...(staged.code === 0 ? ['--allow-empty'] : []), '--file=-'], { ...call, input: `${subject}\n\nRunner-Run: ${rec.runId}\n` });
    }
    const commit = await git.out(['rev-parse', 'HEAD'], call);
    // A run whose change is in the target already (another run's merge of the same change, or the same edit by
    // hand) would land as a merge commit that changes nothing, without a word
    if (!o.squash && !o.allowEmpty && (await git.out(['rev-parse', `${commit}^{tree}`], call)) === (await git.out(['rev-parse', `${old}^{tree}`], call))) {
      throw new DeliveryRefused('not_deliverable', noChange(rec.branch, into));
    }

    if (movesCheckout) {
      // The user's checkout and its branch move together; checked clean again right before, holding the
      // repository's lock as an apply does: a delivery into the checkout at the same time waits.
      const ff = await withRepoLock(project.commonDir, async () => {
        await checkClean(git, project);
        return git.run(['merge', '--ff-only', '--quiet', commit], {
          cwd: project.root,
          gitDir: project.commonDir,
          workTree: project.root,
          config,
          allowFail: true,
        });
      });
      if (ff.code !== 0) {
        // git moves nothing when it cannot fast-forward (untracked files in the way, say).
        throw new DeliveryRefused('target_dirty', `${into} is unchanged: the checkout cannot take the merge: ${ff.stderr.trim().split('\n').slice(0, 6).join('; ')}`);
      }
    } else {
      const moved = await git.run(['update-ref', '-m', `runner merge ${rec.runId}`, target, commit, old], {
        cwd: project.root,
        gitDir: project.commonDir,
        allowFail: true,
      });
      if (moved.code !== 0) throw new DeliveryRefused('conflict', `${into} moved while merging; it is unchanged: try again`);
    }
    return { into, commit, movedCheckout: movesCheckout, author: { ...author, configured: configured !== undefined } };
  } finally {
    // A merge that happened stays reported; a leftover is removed by the next merge's scratch cleanup or by hand.
    await removeTree(scratch).catch(() => undefined);
    await git.run(['worktree', 'prune'], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
  }
}

/** The refusal of a merge that would change nothing in the target. Pure. */
export function noChange(branch: string | null, into: string): string {
  return `${branch ?? "the run's branch"} brings no change to ${into}: its change is there already (merged from another run, or made by hand), so ${into} is unchanged; to record the merge all the same, merge with --allow-empty (API: "allowEmpty": true; MCP: allow_empty)`;
}
