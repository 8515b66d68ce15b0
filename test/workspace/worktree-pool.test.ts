/**
 * The worktree pool against real git (no containers): a worktree a hostile
 * run left (build output, untracked and ignored files, a changed .gitignore,
 * an unreadable file, changed modes, a hard link, a FIFO, a symlink made a
 * directory, a nested repository) goes back to the pool, and a run that
 * claims it gets a tree identical to a fresh checkout: every path, type,
 * mode, owner, content and symlink target, compared one by one.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, link, lstat, mkdir, readdir, readFile, readlink, rm, symlink, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Git } from '../../src/git/git.js';
import { commitAll, createWorktree, resolveBase, type GitWorktree } from '../../src/workspace/git-worktree.js';
import { inspectProject } from '../../src/workspace/project.js';
import { poolSettings, WorktreePool } from '../../src/workspace/worktree-pool.js';
import { git as hostGit, projectsForThisFile } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const open = { size: 2, minFreeBytes: 0, minFreeRatio: 0 };

async function setup(settings = open) {
  const f = await fixture({ remote: false });
  const p = f.project;
  await mkdir(path.join(p, 'src/a/b'), { recursive: true });
  await mkdir(path.join(p, 'bin'));
  await writeFile(path.join(p, 'src/a/b/c.txt'), 'deep\n');
  await writeFile(path.join(p, 'src/keep.txt'), 'kept as it is\n');
  await writeFile(path.join(p, 'bin/run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
  await writeFile(path.join(p, '.gitignore'), 'build/\n*.log\n');
  await symlink('src/a', path.join(p, 'link'));
  hostGit(p, 'add', '-A');
  hostGit(p, '-c', 'user.name=t', '-c', 'user.email=t@l', 'commit', '-qm', 'tree');
  const git = new Git();
  const project = await inspectProject(() => git, p);
  const base = await resolveBase(git, project, undefined);
  const root = path.join(f.root, 'worktrees');
  await mkdir(root);
  return { f, git, project, base, root, pool: new WorktreePool(path.join(f.root, 'pool'), settings) };
}

/** Every entry under dir but its .git link: path, type, mode, owner, links, and content or target. */
async function manifest(dir: string): Promise<string[]> {
  const out: string[] = [];
  const visit = async (rel: string) => {
    const abs = path.join(dir, rel);
    const st = await lstat(abs);
    const what = st.isSymbolicLink() ? `-> ${await readlink(abs)}` : st.isFile() ? createHash('sha256').update(await readFile(abs)).digest('hex').slice(0, 16) : st.isDirectory() ? 'dir' : 'other';
    out.push(`${rel || '.'} ${(st.mode & 0o7777).toString(8)} ${st.uid}:${st.gid} n${st.isDirectory() ? '-' : st.nlink} ${what}`);
    if (!st.isDirectory()) return;
    for (const name of (await readdir(abs)).sort()) if (rel || name !== '.git') await visit(rel ? `${rel}/${name}` : name);
  };
  await visit('');
  return out;
}

/** What a hostile step might leave, then the runner's commit of it. */
async function hostileRun(git: Git, wt: GitWorktree): Promise<void> {
  const w = wt.path;
  await new Promise((r) => setTimeout(r, 20));
  await mkdir(path.join(w, 'build'));
  await writeFile(path.join(w, 'build/out.bin'), Buffer.alloc(4096, 7));
  await writeFile(path.join(w, 'app.log'), 'ignored\n');
  await writeFile(path.join(w, 'notes.txt'), 'untracked\n');
  await writeFile(path.join(w, 'src/a/b/c.txt'), 'changed\n');
  await unlink(path.join(w, 'bin/run.sh'));
  await writeFile(path.join(w, '.gitignore'), 'build/\n*.log\nnotes.txt\nsecret/\n');
  await mkdir(path.join(w, 'secret'));
  await writeFile(path.join(w, 'secret/left-for-the-next-run'), 'hidden\n');
  await chmod(path.join(w, 'src/keep.txt'), 0o600);
  await chmod(path.join(w, 'src/a'), 0o700);
  await writeFile(path.join(w, 'unreadable.txt'), 'no one reads me\n');
  await chmod(path.join(w, 'unreadable.txt'), 0);
  await link(path.join(w, 'README.md'), path.join(w, 'hard-link'));
  await rm(path.join(w, 'link'));
  await mkdir(path.join(w, 'link'));
  await writeFile(path.join(w, 'link/inside'), 'a directory where a symlink was\n');
  execFileSync('mkfifo', [path.join(w, 'pipe')]);
  await mkdir(path.join(w, 'vendor/.git'), { recursive: true });
  await writeFile(path.join(w, 'vendor/.git/config'), '[core]\n\tfsmonitor = touch /tmp/pwned\n');
  await commitAll(git, wt, 'step/hostile\n');
}

test('a worktree a hostile run left goes back to the pool; the next run gets a tree identical to a fresh checkout', async () => {
  const { git, project, base, root, pool } = await setup();
  const wt = await createWorktree(git, project, root, 'run1', 'run/run1', { newFrom: base });
  const preparedAt = Date.now();
  await hostileRun(git, wt);
  assert.notEqual(hostGit(project.root, 'rev-parse', 'run/run1'), base, 'the run committed its work');
  assert.equal(await pool.give(git, wt, preparedAt), true, 'taken back');
  assert.equal((await readdir(pool.dirFor(project))).length, 1);
  await assert.rejects(lstat(wt.path), 'the run\'s worktree path is free again');

  const claimed = await pool.claim(git, project, path.join(root, 'run2'), 'run/run2', base);
  assert.ok(claimed, 'a slot was there to claim');
  assert.equal(claimed.wt.path, path.join(root, 'run2'));
  assert.equal(claimed.wt.branch, 'run/run2');
  assert.equal(hostGit(claimed.wt.path, 'rev-parse', 'HEAD'), base);
  assert.equal(hostGit(claimed.wt.path, 'status', '--porcelain', '--ignored', '--untracked-files=all'), '');
  assert.equal(hostGit(claimed.wt.path, 'symbolic-ref', 'HEAD'), 'refs/heads/run/run2');
  const fresh = await createWorktree(git, project, root, 'run3', 'run/run3', { newFrom: base });
  assert.deepEqual(await manifest(claimed.wt.path), await manifest(fresh.path));
  assert.equal((await readdir(pool.dirFor(project))).length, 0, 'the slot was taken');
  assert.deepEqual(hostGit(project.root, 'worktree', 'list', '--porcelain').match(/^worktree .*$/gm)?.length, 3, 'git knows the main worktree and the two runs');
});

test('a claim at a newer base rewrites only the files that differ', async () => {
  const { git, project, base, root, pool } = await setup();
  const wt = await createWorktree(git, project, root, 'run1', 'run/run1', { newFrom: base });
  // past the checkout's own change times (a file written in the same tick as the hand-over counts as touched)
  await new Promise((r) => setTimeout(r, 20));
  const preparedAt = Date.now();
  assert.equal(await pool.give(git, wt, preparedAt), true, 'an untouched worktree goes back as it is');
  const slot = path.join(pool.dirFor(project), (await readdir(pool.dirFor(project)))[0]!);
  const before = { keep: (await lstat(path.join(slot, 'src/keep.txt'))).ino, changed: (await lstat(path.join(slot, 'data.txt'))).ino };
  // the old file stays linked elsewhere, so its inode number cannot be reused by the file written in its place
  await link(path.join(slot, 'data.txt'), path.join(root, 'old-data.txt'));
  await writeFile(path.join(project.root, 'data.txt'), 'moved on\n');
  hostGit(project.root, '-c', 'user.name=t', '-c', 'user.email=t@l', 'commit', '-qam', 'newer');
  const newer = hostGit(project.root, 'rev-parse', 'HEAD');
  const claimed = await pool.claim(git, project, path.join(root, 'run2'), 'run/run2', newer);
  assert.ok(claimed);
  assert.equal((await lstat(path.join(claimed.wt.path, 'src/keep.txt'))).ino, before.keep, 'an unchanged file is not written');
  assert.notEqual((await lstat(path.join(claimed.wt.path, 'data.txt'))).ino, before.changed, 'a changed one is');
  assert.equal(await readFile(path.join(claimed.wt.path, 'data.txt'), 'utf8'), 'moved on\n');
  const fresh = await createWorktree(git, project, root, 'run3', 'run/run3', { newFrom: newer });
  assert.deepEqual(await manifest(claimed.wt.path), await manifest(fresh.path));
});

test('the pool is bounded, refuses a worktree whose git link a step rewrote, and pools nothing with filter drivers or when off', async () => {
  const { git, project, base, root, pool } = await setup({ ...open, size: 1 });
  const one = await createWorktree(git, project, root, 'r1', 'run/r1', { newFrom: base });
  const two = await createWorktree(git, project, root, 'r2', 'run/r2', { newFrom: base });
  const three = await createWorktree(git, project, root, 'r3', 'run/r3', { newFrom: base });
  assert.equal(await pool.give(git, one, Date.now()), true);
  assert.equal(await pool.give(git, two, Date.now()), false, 'full: one slot');
  await rm(path.join(pool.dirFor(project)), { recursive: true });
  hostGit(project.root, 'worktree', 'prune');
  await writeFile(path.join(three.path, '.git'), `gitdir: ${path.join(project.commonDir, 'worktrees', 'r2')}\n`);
  assert.equal(await pool.give(git, three, Date.now()), false, 'a rewritten .git link is not trusted');
  const four = await createWorktree(git, project, root, 'r5', 'run/r5', { newFrom: base });
  const handed = Date.now();
  await new Promise((r) => setTimeout(r, 20));
  await chmod(path.join(four.path, '.git'), 0o666);
  assert.equal(await pool.give(git, four, handed), false, 'a .git link whose mode a step changed is not taken back');
  assert.equal(await new WorktreePool(pool.root, { ...open, size: 0 }).give(git, two, Date.now()), false, 'off');
  assert.equal(await pool.give(git, { ...two, filterNames: ['lfs'] }, Date.now()), false, 'filter drivers: not pooled');
  assert.equal(await pool.claim(git, project, path.join(root, 'r4'), 'run/r4', base), undefined, 'nothing to claim');
});

test('a slot whose .gitattributes differ from the new base is not claimed (its untouched files would keep the old conversion)', async () => {
  const { git, project, base, root, pool } = await setup();
  const wt = await createWorktree(git, project, root, 'run1', 'run/run1', { newFrom: base });
  assert.equal(await pool.give(git, wt, Date.now()), true);
  await writeFile(path.join(project.root, '.gitattributes'), '*.txt eol=crlf\n');
  hostGit(project.root, 'add', '.gitattributes');
  hostGit(project.root, '-c', 'user.name=t', '-c', 'user.email=t@l', 'commit', '-qm', 'crlf');
  const newer = hostGit(project.root, 'rev-parse', 'HEAD');
  assert.equal(await pool.claim(git, project, path.join(root, 'run2'), 'run/run2', newer), undefined);
  assert.deepEqual(await readdir(pool.dirFor(project)), [], 'the slot went');
  assert.equal(hostGit(project.root, 'branch', '--list', 'run/run2'), '', 'and no branch was left');
});

test('RUNNER_WORKTREE_POOL: slots per project, 0 turns the pool off, anything else is refused saying so', () => {
  assert.equal(poolSettings({}).size, 2);
  assert.equal(poolSettings({ RUNNER_WORKTREE_POOL: '0' }).size, 0);
  assert.equal(poolSettings({ RUNNER_WORKTREE_POOL: '5' }).size, 5);
  assert.throws(() => poolSettings({ RUNNER_WORKTREE_POOL: 'lots' }), /RUNNER_WORKTREE_POOL must be a whole number from 0 to 64/);
});
