/** The worktree module against a real git repository (no containers). */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { WorkspaceError } from '../../src/common/errors.js';
import { Git } from '../../src/git/git.js';
import { commitAll, createWorktree, removeWorktree, resolveBase, savePatch, verifyGitLinks } from '../../src/workspace/git-worktree.js';
import { inspectProject } from '../../src/workspace/project.js';
import { git as hostGit, projectsForThisFile } from '../fixtures/project.js';

const fixture = projectsForThisFile();

async function setup() {
  const f = await fixture({ remote: false });
  const git = new Git();
  const project = await inspectProject(() => git, f.project);
  const base = await resolveBase(git, project, undefined);
  const root = path.join(f.root, 'worktrees');
  await mkdir(root);
  return { f, git, project, base, root };
}

test('a symlink already at the workspace path is refused, and what it points to is untouched', async () => {
  const { f, git, project, base, root } = await setup();
  const elsewhere = path.join(f.root, 'elsewhere');
  await mkdir(elsewhere);
  await symlink(elsewhere, path.join(root, 'run1'));
  await assert.rejects(createWorktree(git, project, root, 'run1', 'run/run1', { newFrom: base }), (e: unknown) => e instanceof WorkspaceError && e.code === 'worktree_exists');
  assert.deepEqual(await readdir(elsewhere), []);
});

test('a failed worktree add leaves no directory behind', async () => {
  const { git, project, base, root } = await setup();
  hostGit(project.root, 'branch', 'run'); // `run/<id>` cannot exist beside a branch named `run`
  await assert.rejects(createWorktree(git, project, root, 'run2', 'run/run2', { newFrom: base }));
  assert.equal(existsSync(path.join(root, 'run2')), false);
});

test('a worktree that fails after git made its branch takes the branch with it', async () => {
  const { git, project, base, root } = await setup();
  // Real git throughout; the failure is injected after `worktree add` made the branch.
  const failing = new (class extends Git {
    override async run(args: readonly string[], call: Parameters<Git['run']>[1]) {
      if (args[0] === 'rev-parse' && args[1] === 'refs/heads/run/run9') throw new WorkspaceError('injected', 'injected failure');
      return git.run(args, call);
    }
  })();
  await assert.rejects(createWorktree(failing, project, root, 'run9', 'run/run9', { newFrom: base }), /injected failure/);
  assert.equal(existsSync(path.join(root, 'run9')), false);
  assert.equal(hostGit(project.root, 'branch', '--list', 'run/run9'), '', 'no branch is left that no record names');
});

test('commits go to the run branch; a rewritten .git is detected and the work saved as a patch', async () => {
  const { git, project, base, root } = await setup();
  const wt = await createWorktree(git, project, root, 'run3', 'run/run3', { newFrom: base });
  await writeFile(path.join(wt.path, 'a.txt'), 'a\n');
  const { commit: sha } = await commitAll(git, wt, 'step/a (x): a\n');
  assert.ok(sha);
  assert.equal(hostGit(project.root, 'show', 'run/run3:a.txt'), 'a');
  assert.equal((await commitAll(git, wt, 'nothing\n')).commit, undefined, 'no change, no commit');

  await writeFile(path.join(wt.path, 'b.txt'), 'b\n');
  await writeFile(path.join(wt.path, '.git'), `gitdir: ${path.join(project.root, '.git')}\n`);
  await assert.rejects(verifyGitLinks(wt), (e: unknown) => e instanceof WorkspaceError && e.code === 'workspace_tampered');
  await assert.rejects(commitAll(git, wt, 'tampered\n'), /no longer the file git wrote/);
  const patch = path.join(root, '..', 'b.patch');
  // a name git refuses does not cost the patch the rest of the work: it is named
  await mkdir(path.join(wt.path, '.Git'));
  await writeFile(path.join(wt.path, '.Git', 'config'), '[core]\n');
  assert.deepEqual(await savePatch(git, wt, patch), { saved: true, big: [], removed: [], notAdded: [Buffer.from('.Git/config')] });
  assert.match(await readFile(patch, 'utf8'), /\+\+\+ b\/b\.txt/);
  assert.equal(hostGit(project.root, 'rev-parse', 'run/run3'), sha, 'the tampered work was not committed');
  assert.equal(hostGit(project.root, 'status', '--porcelain'), '', 'the main checkout is untouched');

  await removeWorktree(git, wt);
  assert.equal(existsSync(wt.path), false);
  assert.equal(hostGit(project.root, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ')).length, 1);
});
