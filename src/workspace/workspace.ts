/**
 * What a run works in. Three kinds, one interface the orchestrator drives:
 *   git_worktree          a fresh worktree on run/<runId>, removed at the end (run-worktree.ts)
 *   task_worktree         a worktree on feat/<taskId>-<slug> kept across runs (task-worktree.ts)
 *   persistent_directory  the project directory itself, no git (persistent-dir.ts)
 */
import type { Mount } from '../container/runtime.js';
import type { PushOutcome } from '../git/push.js';
import type { ChangeList } from './snapshot.js';

export type WorkspaceKind = 'git_worktree' | 'task_worktree' | 'persistent_directory';

/** What the workspace made of what a step left. */
export interface StepWork {
  commit: string | null;
  /** persistent_directory: files added, modified and deleted */
  changes?: ChangeList;
  /** the runner refused or could not record the work (all of it, or `notRecorded`) */
  error?: 'workspace_tampered' | 'commit_failed' | 'work_not_recorded';
  message?: string;
  /** where the work was saved when it could not be committed */
  patch?: string;
  /** the work could be neither committed nor saved: the workspace must be kept */
  unsaved?: boolean;
  /** paths of the step's work on no commit nor patch (names git refuses, what it cannot read), shown visibly: the workspace must be kept */
  notRecorded?: { paths: string[]; count: number };
}

/** A lane brought back: the merge commit (null when it changed nothing), or the files both sides changed. */
export type LaneMergeResult = { commit: string | null } | { conflict: string[] };

export interface Workspace {
  readonly kind: WorkspaceKind;
  /** mounted read-write at /home/agent/run-workspace */
  readonly path: string;
  readonly owner: { uid: number; gid: number };
  /** the project directory (git kinds: the repository's top level) */
  readonly project: string;
  readonly branch: string | null;
  readonly baseSha: string | null;
  /** true when this run created the workspace (after_create hooks run then) */
  readonly created: boolean;
  /** how many runs have used this workspace, this one included (RUNNER_ATTEMPT) */
  readonly attempt: number;
  /**
   * Set when the workspace holds what earlier runs left (a task's worktree after its first run, or made again from
   * a branch earlier runs committed to): where it is, for the log. Its steps do not write caches (cache/write-trust.ts).
   */
  readonly earlierWork?: string;
  /** read-only mounts besides the workspace (the project, its git directory) */
  mounts(): Mount[];
  /**
   * A run's own worktree only: after prepareStep, `slot` (an empty directory a warm step container mounts) takes
   * the workspace's place, holding what it held (take-place.ts). Absent where the directory is not the runner's to
   * swap (a persistent directory, a task's worktree kept across runs).
   */
  takePlace?(slot: string): Promise<void>;
  /** Before a step: checks the workspace is intact and gives it to the step's user. */
  prepareStep(user: { uid: number; gid: number }): Promise<void>;
  /** After a step: commits (git kinds) or lists the changes (persistent). Never loses the work. */
  recordStep(message: string, patchFile: string): Promise<StepWork>;
  head(): Promise<string | null>;
  /**
   * Git kinds: makes `into` (a new directory) a small repository of the branch's head and its history down to the
   * base, the `.git` a step on another node gets with its worktree (git-copy.ts).
   */
  gitCopy?(into: string): Promise<void>;
  /** Pushes the branch when there is one and the policy says so. */
  push(): Promise<PushOutcome | null>;
  /**
   * For a step that runs at once with others: a workspace of its own cut from
   * this one (git kinds: a worktree on a branch of its own), or this one when
   * steps share it (a persistent directory with shared_workspace).
   */
  openLane(name: string): Promise<Workspace>;
  /** Brings a lane's work into this workspace (a merge); nothing to do for a shared one. */
  mergeLane(lane: Workspace, message: string): Promise<LaneMergeResult>;
  /** Deletes branches lanes were on once their work is merged. */
  dropBranches(branches: string[]): Promise<void>;
  /** True when the run should remove it at the end (only a per-run worktree). */
  readonly disposable: boolean;
  /** Removes a disposable workspace; for the others, releases the run's hold on it. */
  /** `reuse: false`: the run's containers may still be alive (the engine did not say they are gone), so nothing of the workspace is kept for another run */
  release(remove: boolean, opts?: { reuse?: boolean }): Promise<void>;
}
