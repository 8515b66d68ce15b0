/** A task's worktree against a real git repository (no containers): what its runs find there. */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Git } from '../../src/git/git.js';
import { resolveBase } from '../../src/workspace/git-worktree.js';
import { inspectProject } from '../../src/workspace/project.js';
import { openTaskWorktree, type TaskOpen } from '../../src/workspace/task-worktree.js';
import { git as hostGit, projectsForThisFile } from '../fixtures/project.js';

const fixture = projectsForThisFile();

async function setup() {
  const f = await fixture({ remote: false });
  const git = new Git();
  const project = await inspectProject(() => git, f.project);
  const base = await resolveBase(git, project, undefined);
  const tasks = path.join(f.root, 'tasks');
  const lanes = path.join(f.root, 'worktrees');
  await mkdir(tasks);
  await mkdir(lanes);
  const open = (taskId: string, runId: string) =>
    openTaskWorktree({
      git,
      project,
      tasksRoot: tasks,
      lanesRoot: lanes,
      taskId,
      title: undefined,
      base,
      remote: 'origin',
      pushPolicy: 'never',
      pipelineFile: path.join(f.root, 'pipeline.yaml'),
      runId,
      now: new Date(),
      wait: { noWait: true, signal: new AbortController().signal, onWait: () => undefined },
      say: () => undefined,
    } as TaskOpen);
  return { f, open };
}

test("a task's first run, from the project's base, holds no earlier run's work; every later run does (its steps do not write caches)", async () => {
  const { open } = await setup();
  const first = await open('T1', 'r1');
  assert.equal(first.earlierWork, undefined, 'fresh from the base: the caches are written as in a run of its own');
  // what the first run's agent left: a commit on the task's branch, and a file git ignores
  await writeFile(path.join(first.path, 'fill.sh'), 'echo planted\n');
  hostGit(first.path, 'add', 'fill.sh');
  hostGit(first.path, '-c', 'user.name=a', '-c', 'user.email=a@localhost', 'commit', '-q', '-m', 'agent');
  await first.release(false);

  const next = await open('T1', 'r2');
  assert.equal(next.earlierWork, "task T1's worktree (feat/T1)");
  await next.release(false);
});

test("a task's worktree made anew on a branch earlier runs committed to (after runner task rm) holds their work", async () => {
  const { f, open } = await setup();
  hostGit(f.project, 'branch', 'feat/T2');
  hostGit(f.project, 'worktree', 'add', '-q', path.join(f.root, 'elsewhere'), 'feat/T2');
  await writeFile(path.join(f.root, 'elsewhere', 'fill.sh'), 'echo planted\n');
  hostGit(path.join(f.root, 'elsewhere'), 'add', 'fill.sh');
  hostGit(path.join(f.root, 'elsewhere'), '-c', 'user.name=a', '-c', 'user.email=a@localhost', 'commit', '-q', '-m', 'an earlier run');
  hostGit(f.project, 'worktree', 'remove', path.join(f.root, 'elsewhere'));
  const ws = await open('T2', 'r3');
  assert.equal(ws.created, true);
  assert.equal(ws.earlierWork, "task T2's worktree (feat/T2)");
  await ws.release(false);
});
