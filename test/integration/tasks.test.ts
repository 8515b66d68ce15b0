/** Task worktrees: work that spans several runs on one branch. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rm, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, execPipeline, git, pipelineYaml, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const STEP = `  - id: work
    run: |
      echo "run $RUNNER_RUN_ID attempt $RUNNER_TASK_RUN task $RUNNER_TASK_ID" >> progress.txt
      echo "summary=attempt $RUNNER_TASK_RUN" >> "$RUNNER_OUTPUT"
`;

test('three runs of one task make one branch with all their commits; the worktree survives; task rm keeps the branch', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(STEP));
  const runs = [];
  for (let i = 0; i < 3; i++) {
    const r = await execPipeline(f, file, ['--task', 'login-fix', '--title', 'Fix the login bug!']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.json.workspace, 'task_worktree');
    assert.equal(r.json.branch, 'feat/login-fix-fix-the-login-bug');
    assert.ok(existsSync(path.join(f.home, 'tasks', 'login-fix', 'progress.txt')), 'the worktree survives the run');
    runs.push(r.json);
  }
  const base = git(f.project, 'rev-parse', 'main');
  const commits = commitsOn(f.project, 'feat/login-fix-fix-the-login-bug', base);
  assert.deepEqual(commits.map((c) => c.subject), [3, 2, 1].map((n) => `step/work (runner/base:latest): attempt ${n}`));
  assert.equal(git(f.project, 'show', 'feat/login-fix-fix-the-login-bug:progress.txt').split('\n').length, 3);
  assert.equal(git(f.remote, 'rev-parse', 'feat/login-fix-fix-the-login-bug'), runs[2].headSha, 'pushed');

  const ls = await runCli(['task', 'ls', '--home', f.home]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /^login-fix\s+feat\/login-fix-fix-the-login-bug\s+3\s/m);

  const removed = await runCli(['task', 'rm', 'login-fix', '--home', f.home]);
  assert.equal(removed.code, 0, removed.stderr);
  assert.equal(existsSync(path.join(f.home, 'tasks', 'login-fix')), false);
  assert.equal(git(f.project, 'rev-parse', 'feat/login-fix-fix-the-login-bug'), runs[2].headSha, 'the branch is kept');
  assert.match((await runCli(['task', 'ls', '--home', f.home])).stdout, /no tasks/);

  const again = await execPipeline(f, file, ['--task', 'login-fix']);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.json.branch, 'feat/login-fix-fix-the-login-bug', 'a removed task picks its kept branch up again');
  assert.equal(again.json.baseSha, runs[2].headSha);
});

test('a task whose remote moved is fast-forwarded before the run', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(STEP));
  const first = await execPipeline(f, file, ['--task', 't1']);
  assert.equal(first.code, 0, first.stderr);
  // Someone else pushes a commit to the task's branch.
  const other = path.join(f.root, 'other');
  git(f.root, 'clone', '-q', '--branch', 'feat/t1', f.remote, other);
  await writeFile(path.join(other, 'theirs.txt'), 'from elsewhere\n');
  git(other, 'add', '-A');
  git(other, '-c', 'user.name=o', '-c', 'user.email=o@x', 'commit', '-qm', 'theirs');
  git(other, 'push', '-q', 'origin', 'feat/t1');
  const theirs = git(other, 'rev-parse', 'HEAD');

  const second = await execPipeline(f, file, ['--task', 't1']);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /fast-forwarded to origin/);
  assert.equal(second.json.baseSha, theirs);
  assert.equal(git(f.project, 'show', 'feat/t1:theirs.txt'), 'from elsewhere');
});

test('a task worktree whose .git became a directory is neither reused nor deleted', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(STEP));
  assert.equal((await execPipeline(f, file, ['--task', 't2'])).code, 0);
  const dir = path.join(f.home, 'tasks', 't2');
  await rm(path.join(dir, '.git'));
  await mkdir(path.join(dir, '.git'));
  await writeFile(path.join(dir, 'precious.txt'), 'keep me\n');
  const r = await execPipeline(f, file, ['--task', 't2']);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.error.code, 'task_git_replaced');
  assert.match(r.json.error.message, /\.git has become a directory .*not reused and its files are kept/);
  assert.ok(existsSync(path.join(dir, 'precious.txt')), 'the files are kept');
});

test('a stale index.lock is removed only when old; a recent one stops the run', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(STEP));
  assert.equal((await execPipeline(f, file, ['--task', 't3'])).code, 0);
  const gitDir = path.join(f.project, '.git', 'worktrees', 't3');
  const lock = path.join(gitDir, 'index.lock');
  await writeFile(lock, '');
  const recent = await execPipeline(f, file, ['--task', 't3']);
  assert.equal(recent.code, 3, recent.stderr);
  assert.match(recent.json.error.message, /index\.lock exists and is recent/);
  const old = new Date(Date.now() - 60 * 60_000);
  await utimes(lock, old, old);
  const r = await execPipeline(f, file, ['--task', 't3']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /removed a stale .*index\.lock \(60 minutes old, held by no process\)/);
});

test('bad task ids are refused; --title needs --task', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(STEP));
  for (const bad of ['../x', 'a b', '..']) {
    const r = await runCli(['exec', file, '--home', f.home, '--task', bad]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, /task id .* is not a safe name|cannot be used as a name/);
  }
  const r = await runCli(['exec', file, '--home', f.home, '--title', 'x']);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--title goes with --task/);
});

test('task rm refuses a worktree holding uncommitted changes, unless --force', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(STEP));
  assert.equal((await execPipeline(f, file, ['--task', 't4'])).code, 0);
  await writeFile(path.join(f.home, 'tasks', 't4', 'NOTES.md'), 'my notes\n');
  const r = await runCli(['task', 'rm', 't4', '--home', f.home]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /holds changes no commit has \(\?\? NOTES\.md\).*--force/);
  assert.ok(existsSync(path.join(f.home, 'tasks', 't4', 'NOTES.md')));
  const forced = await runCli(['task', 'rm', 't4', '--force', '--home', f.home]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(existsSync(path.join(f.home, 'tasks', 't4')), false);
});
