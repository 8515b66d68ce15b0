/** Chooses and opens the workspace a run works in, from the pipeline and the flags. */
import path from 'node:path';
import { UsageError, WorkspaceError } from '../common/errors.js';
import type { Git, GitIdentity } from '../git/git.js';
import type { PipelineFile } from '../pipeline/schema.js';
import type { LockWait } from './dir-lock.js';
import { resolveBase } from './git-worktree.js';
import type { RunnerHome } from './home.js';
import { checkPersistentDir, openPersistentDir } from './persistent-dir.js';
import { inspectProject, type ProjectFacts } from './project.js';
import { openContinuedWorktree, openRunWorktree } from './run-worktree.js';
import { openTaskWorktree } from './task-worktree.js';
import { readUncommitted, type Uncommitted } from './uncommitted.js';
import { WorktreePool } from './worktree-pool.js';
import type { Workspace } from './workspace.js';

export interface TaskFlags {
  id: string;
  title?: string;
}

/** Facts checked before a run exists: a bad project leaves nothing behind. */
export type Prepared =
  | { kind: 'persistent_directory'; dir: string }
  | { kind: 'git_worktree' | 'task_worktree'; project: ProjectFacts; git: Git; baseSha: string; uncommitted?: Uncommitted };

export async function prepareWorkspace(
  pipeline: PipelineFile,
  pipelineDir: string,
  task: TaskFlags | undefined,
  userSettings: string[],
  makeGit: (who: GitIdentity) => Git,
  /** the pipeline file: read where it is, so not among what a run leaves out */
  pipelineFile?: string,
): Promise<Prepared> {
  const dir = path.resolve(pipelineDir, pipeline.project.path);
  if (pipeline.project.workspace === 'persistent_directory') {
    if (task) throw new UsageError('--task needs a git project; this pipeline uses a persistent_directory workspace');
    await checkPersistentDir(dir, userSettings);
    return { kind: 'persistent_directory', dir };
  }
  let project: ProjectFacts;
  try {
    project = await inspectProject(makeGit, dir);
  } catch (err) {
    if (err instanceof WorkspaceError && err.code === 'not_a_repository' && pipeline.project.workspace === undefined) {
      throw new WorkspaceError(
        'not_a_repository',
        `${err.message.replace(/: run `git init`.*$/, '')}: run \`git init\` there, or set project.workspace: persistent_directory in the pipeline`,
      );
    }
    throw err;
  }
  const git = makeGit({ uid: project.uid, gid: project.gid });
  const baseSha = await resolveBase(git, project, pipeline.project.base);
  // from HEAD, the checkout's uncommitted edits are what the user may think the run sees; from another base, it is plain they are not
  const fromHead = pipeline.project.base === undefined || pipeline.project.base === 'HEAD';
  return { kind: task ? 'task_worktree' : 'git_worktree', project, git, baseSha, ...(fromHead ? { uncommitted: await readUncommitted(git, project, pipelineFile ? [path.relative(project.root, path.resolve(pipelineFile))] : []) } : {}) };
}

export interface OpenContext {
  prepared: Prepared;
  pipeline: PipelineFile;
  pipelineFile: string;
  home: RunnerHome;
  runId: string;
  now: Date;
  task: TaskFlags | undefined;
  wait: LockWait;
  say: (message: string) => void;
  /** a resumed run (its branch as it is) or a fork (a new branch from a commit), with the first run's base */
  continued?: { start: { existing: true } | { newFrom: string }; baseSha: string };
}

export async function openWorkspace(c: OpenContext): Promise<Workspace> {
  const p = c.prepared;
  const push = { remote: c.pipeline.project.remote, policy: c.pipeline.project.push };
  if (p.kind === 'persistent_directory') return openPersistentDir(p.dir, c.wait);
  if (p.kind === 'git_worktree' && c.continued) return openContinuedWorktree(p.git, p.project, c.home.worktrees, c.runId, c.continued.start, c.continued.baseSha, push);
  if (p.kind === 'git_worktree') return openRunWorktree(p.git, p.project, c.home.worktrees, c.runId, p.baseSha, push, new WorktreePool(c.home.pool));
  return openTaskWorktree({
    git: p.git,
    project: p.project,
    tasksRoot: c.home.tasks,
    lanesRoot: c.home.worktrees,
    taskId: c.task!.id,
    title: c.task!.title,
    base: p.baseSha,
    remote: push.remote,
    pushPolicy: push.policy,
    pipelineFile: c.pipelineFile,
    runId: c.runId,
    now: c.now,
    wait: c.wait,
    say: c.say,
  });
}
