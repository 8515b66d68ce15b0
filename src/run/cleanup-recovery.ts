/**
 * Recovery of a run whose runner died after the run's outcome was decided
 * (record.cleanup set, its status final) and before its cleanup was done:
 * the cleanup is finished, never undone. The workspace cleanup was giving
 * back or removing is removed, with what a give-back cut short left beside
 * it; nothing in it is committed (whatever it holds is half taken apart, and
 * the run's branch was final before cleanup began); the status stays.
 */
import path from 'node:path';
import { rm } from 'node:fs/promises';
import { errorMessage } from '../common/errors.js';
import { tryLock } from '../common/kernel-lock.js';
import type { Git, GitIdentity } from '../git/git.js';
import { removeWorktreeAt } from '../workspace/git-worktree.js';
import type { RunnerHome } from '../workspace/home.js';
import { inspectProject, type ProjectFacts } from '../workspace/project.js';
import { removeTree } from '../workspace/remove-tree.js';
import { taskLockKey } from '../workspace/task-worktree.js';
import { renewalsOf } from '../workspace/worktree-pool.js';
import type { RunRecord } from './record.js';

type MakeGit = (who: GitIdentity) => Git;

/** The project's git, as its owner; undefined (said in `notes`) when the project is gone. */
export async function projectGit(makeGit: MakeGit, rec: RunRecord, notes: string[]): Promise<{ git: Git; project: ProjectFacts } | undefined> {
  try {
    const project = await inspectProject(makeGit, rec.project);
    return { git: makeGit({ uid: project.uid, gid: project.gid }), project };
  } catch (err) {
    notes.push(`its project could not be read for git's bookkeeping (${errorMessage(err)})`);
    return undefined;
  }
}

/**
 * Removes a worktree that cleanup was taking apart, never reading it: the
 * tree, the temporary directory a give-back made its top level anew in, and
 * git's record of it (pruned). Only a direct child of `root` is touched.
 */
export async function removeHalfCleaned(repo: { git: Git; project: ProjectFacts } | undefined, root: string, dir: string): Promise<void> {
  if (path.dirname(dir) !== root) throw new Error(`${dir} is not in ${root}: left alone`);
  for (const renewal of await renewalsOf(dir)) await removeTree(renewal);
  if (repo) await removeWorktreeAt(repo.git, repo.project, dir);
  else await removeTree(dir);
}

/** Finishes the cleanup of `rec` (its owner is gone, its lock held by the caller); returns what was done, for the console. */
export async function finishCleanup(makeGit: MakeGit, home: RunnerHome, rec: RunRecord, notes: string[]): Promise<string> {
  const wanted = rec.cleanup!;
  const done: string[] = [];
  const repo = rec.workspace === 'persistent_directory' ? undefined : await projectGit(makeGit, rec, notes);
  // Lanes still listed were being removed (or could not be): they go, their branches stay as they are.
  for (const lane of rec.lanes ?? []) {
    try {
      await removeHalfCleaned(repo, home.worktrees, lane.worktree);
      done.push(`removed the lane worktree ${lane.worktree}`);
    } catch (err) {
      notes.push(`the lane worktree ${lane.worktree} could not be removed: ${errorMessage(err)}`);
    }
  }
  if (wanted.workspace === 'remove' && rec.worktree) {
    if (rec.workspace === 'git_worktree') {
      try {
        await removeHalfCleaned(repo, home.worktrees, rec.worktree);
        done.push(`removed its worktree ${rec.worktree}`);
      } catch (err) {
        rec.keptWorkspace = true;
        notes.push(`its worktree ${rec.worktree} could not be removed (${errorMessage(err)}): runner gc ${rec.runId} removes it`);
      }
    } else if (rec.workspace === 'task_worktree' && rec.taskId) {
      // A task another run holds now is that run's: it is left to it.
      const taskLock = await tryLock('workspace', taskLockKey(home.tasks, rec.taskId));
      if (!taskLock) notes.push(`task ${rec.taskId} is in use by another run: its worktree was not removed`);
      else {
        try {
          await removeHalfCleaned(repo, home.tasks, rec.worktree);
          await rm(path.join(home.tasks, `${rec.taskId}.json`), { force: true });
          done.push(`removed the worktree of task ${rec.taskId}`);
        } catch (err) {
          notes.push(`the worktree of task ${rec.taskId} could not be removed: ${errorMessage(err)}`);
        } finally {
          await taskLock.release();
        }
      }
    }
  }
  rec.cleanup = null;
  rec.lanes = [];
  rec.current = null;
  rec.running = [];
  if (rec.status !== 'awaiting_approval') rec.finishedAt ??= wanted.since; // a run at its gate has not ended
  return [...done, ...notes].join('; ');
}
