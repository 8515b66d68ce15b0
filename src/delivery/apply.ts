/**
 * `runner apply RUN_ID`: the run's change, base to head, applied to the
 * project's checkout as uncommitted changes. Refused, changing nothing, when
 * the checkout is dirty, a verify step did not pass, the change leaves
 * delivery.paths, or the patch does not apply (checked with a temporary
 * index, without touching the checkout).
 */
import { chown, mkdtemp, rm } from 'node:fs/promises';
import path from 'node:path';
import { filtersOff } from '../git/git.js';
import { withRepoLock } from '../git/repo-lock.js';
import { visible } from '../common/visible.js';
import { repositoryFilters } from '../workspace/git-worktree.js';
import { writeBinaryPatch } from '../workspace/patch-file.js';
import { changedPaths, checkClean, checkRecorded, checkScope, checkVerification } from './guards.js';
import { guardSymlinks } from './symlinks.js';
import { DeliveryRefused } from './refusal.js';
import type { DeliverySource } from './source.js';

export async function applyRun(src: DeliverySource, scratchRoot: string): Promise<{ files: string[] }> {
  const { git, project } = src;
  checkVerification(src.rec);
  checkRecorded(src.rec);
  await checkClean(git, project);
  const files = await changedPaths(git, project, src.base, src.head);
  checkScope(src.rec, files);
  await guardSymlinks(git, project, src.rec, src.base, src.head);

  const scratch = await mkdtemp(path.join(scratchRoot, '.apply-'));
  try {
    await chown(scratch, project.uid, project.gid);
    const patch = path.join(scratch, 'change.patch');
    const { big } = await writeBinaryPatch(git, { cwd: project.root, gitDir: project.commonDir }, [src.base, src.head], patch);
    if (big.length) {
      throw new DeliveryRefused(
        'patch_invalid',
        `the run's change has ${big.length} file(s) over 16 MiB (${big.slice(0, 3).map((p) => visible(p)).join(', ')}), which a patch does not carry: merge it instead (runner merge ${src.rec.runId})`,
      );
    }
    // From here to the write, the checkout is this delivery's alone: another apply or a merge that moves the
    // checkout (any process) waits, so two deliveries that each found it clean never both write into it.
    await withRepoLock(project.commonDir, async () => {
      await checkClean(git, project);
      const check = { cwd: project.root, gitDir: project.commonDir, indexFile: path.join(scratch, 'index') };
      await git.run(['read-tree', 'HEAD'], check);
      let r = await git.run(['apply', '--cached', '--check', '--binary', patch], { ...check, allowFail: true });
      // ... and to the files as they are (an untracked file may stand where the change puts one).
      if (r.code === 0) r = await git.run(['apply', '--check', '--binary', patch], { cwd: project.root, gitDir: project.commonDir, workTree: project.root, allowFail: true });
      if (r.code !== 0) {
        throw new DeliveryRefused(
          'patch_invalid',
          `the run's change does not apply to ${project.root} at HEAD: ${r.stderr.trim().split('\n').slice(0, 5).join('; ')}; the project changed where the run did: run the pipeline again on the current HEAD, or merge the run (runner merge ${src.rec.runId}) and settle any conflict by hand with git merge ${src.rec.branch}`,
        );
      }
      // The checkout is clean (checked above), so what applies to the index applies to the files.
      // The change is a step's work: no filter driver it selects runs.
      await git.run(['apply', '--binary', patch], {
        cwd: project.root,
        gitDir: project.commonDir,
        workTree: project.root,
        config: filtersOff(await repositoryFilters(git, project)),
      });
    });
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
  return { files };
}
