/**
 * The `.git` a step on another node gets (git-copy.ts), made from a real
 * repository with real git, and read by git as a step would: its log back to
 * the base, a diff against the base, a clean status. No containers.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cp, mkdir, readdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { Git } from '../../src/git/git.js';
import { copyFetchArgs, historyDepth, makeGitCopy } from '../../src/workspace/git-copy.js';
import { createWorktree, resolveBase } from '../../src/workspace/git-worktree.js';
import { inspectProject } from '../../src/workspace/project.js';
import { git as hostGit, projectsForThisFile } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('historyDepth: the base is one past the commits since it', () => {
  assert.equal(historyDepth(0), 1, 'the first step: the base alone');
  assert.equal(historyDepth(3), 4);
  assert.throws(() => historyDepth(-1), RangeError);
  assert.throws(() => historyDepth(Number.NaN), RangeError);
  assert.throws(() => historyDepth(1.5), RangeError);
});

test('copyFetchArgs: the head into the branch by id over file://, the base too only when the head does not descend from it', () => {
  const of = { head: 'h'.repeat(40), base: 'b'.repeat(40), branch: 'run/abc+lane' };
  const a = copyFetchArgs('/srv/my project/.git', of, 2, true);
  assert.deepEqual(a.slice(-3), ['--depth=3', 'file:///srv/my%20project/.git', `${of.head}:refs/heads/run/abc+lane`]);
  assert.ok(a.includes('--no-tags') && a.includes('--no-recurse-submodules'));
  assert.deepEqual(copyFetchArgs('/r', of, 2, false).slice(-2), [`${of.head}:refs/heads/run/abc+lane`, `${of.base}:refs/runner/base`]);
  assert.equal(copyFetchArgs('/r', { ...of, base: of.head }, 0, false).at(-1), `${of.head}:refs/heads/run/abc+lane`);
});

/** git as a step runs it in its workspace (its own config, none of the runner's hardening) */
const stepGit = (dir: string, ...args: string[]) => execFileSync('git', ['-c', 'safe.directory=*', '-C', dir, ...args], { encoding: 'utf8', env: { PATH: process.env.PATH, HOME: '/nonexistent', GIT_CONFIG_NOSYSTEM: '1' } });

async function setup(files: number, owner?: number) {
  const f = await fixture({ remote: false, ...(owner !== undefined ? { owner } : {}) });
  const project = f.project;
  // history before the base, which the copy leaves out
  await writeFile(path.join(project, 'old.txt'), 'old\n');
  hostGit(project, 'add', '-A');
  hostGit(project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'before the base');
  for (let i = 0; i < files; i++) {
    const dir = path.join(project, 'src', `d${i % 40}`);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, `f${i}.ts`), `// file ${i}\n${`export const v${i} = ${i};\n`.repeat(60)}`);
  }
  hostGit(project, 'add', '-A');
  hostGit(project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'the base');
  if (owner !== undefined) execFileSync('chown', ['-R', `${owner}:${owner}`, project]);
  const git = new Git(owner !== undefined ? { uid: owner, gid: owner } : {});
  const facts = await inspectProject(() => git, project);
  const base = await resolveBase(git, facts, undefined);
  const root = path.join(f.root, 'worktrees');
  await mkdir(root);
  if (owner !== undefined) execFileSync('chown', [`${owner}:${owner}`, root]);
  const wt = await createWorktree(git, facts, root, 'run1', 'run/run1', { newFrom: base });
  // two steps' commits on the run's branch
  for (const n of [1, 2]) {
    await writeFile(path.join(wt.path, 'data.txt'), `step ${n}\n`);
    hostGit(wt.path, 'add', '-A');
    hostGit(wt.path, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', `step ${n}`);
  }
  const head = hostGit(wt.path, 'rev-parse', 'HEAD');
  return { f, git, facts, base, head, wt };
}

/** The step's workspace on its node: the worktree's files, the copy as its .git. */
async function onTheNode(wtPath: string, copy: string, into: string): Promise<string> {
  await cp(wtPath, into, { recursive: true, filter: (src) => path.relative(wtPath, src).split(path.sep)[0] !== '.git' });
  await cp(copy, path.join(into, '.git'), { recursive: true });
  return into;
}

async function bytesUnder(dir: string): Promise<number> {
  let n = 0;
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) if (e.isFile()) n += (await stat(path.join(e.parentPath ?? e.path, e.name))).size;
  return n;
}

test('the copy answers a step as the repository would: log back to the base, diff against it, a clean status, the branch', { timeout: 60_000 }, async () => {
  const { f, git, facts, base, head, wt } = await setup(1000);
  const copy = path.join(f.root, 'copy');
  const started = performance.now();
  await makeGitCopy(git, facts, { head, base, branch: wt.branch }, copy);
  const ms = performance.now() - started;
  const bytes = await bytesUnder(copy);
  console.log(`git copy of 1,000 files (${Math.round((await bytesUnder(path.join(wt.path, 'src'))) / 1024)} KB of source): ${Math.round(ms)} ms, ${Math.round(bytes / 1024)} KB`);
  assert.ok(bytes < 2 * 1024 ** 2, `${bytes} bytes`);
  const ws = await onTheNode(wt.path, copy, path.join(f.root, 'node'));
  assert.equal(stepGit(ws, 'rev-parse', 'HEAD').trim(), head);
  assert.equal(stepGit(ws, 'rev-parse', '--abbrev-ref', 'HEAD').trim(), 'run/run1');
  assert.deepEqual(stepGit(ws, 'log', '--format=%s').trim().split('\n'), ['step 2', 'step 1', 'the base'], 'back to the base, nothing before');
  assert.equal(stepGit(ws, 'status', '--porcelain'), '', 'clean');
  assert.match(stepGit(ws, 'diff', base), /^-one\n-two\n\+step 2$/m);
  assert.match(stepGit(ws, 'diff', 'HEAD~1'), /^-step 1\n\+step 2$/m);
  // what the step changes, and only that, is in its status
  await writeFile(path.join(ws, 'new.txt'), 'new\n');
  await writeFile(path.join(ws, 'src/d1/f1.ts'), 'changed\n');
  assert.deepEqual(stepGit(ws, 'status', '--porcelain').split('\n').filter(Boolean).sort(), [' M src/d1/f1.ts', '?? new.txt']);
  // a commit there works (the step's own identity)
  stepGit(ws, '-c', 'user.name=s', '-c', 'user.email=s@x', 'commit', '-qam', 'in the step');
  assert.equal(stepGit(ws, 'rev-list', '--count', `${base}..HEAD`).trim(), '3');
});

test('the first step: the copy is the base alone', async () => {
  const f = await fixture({ remote: false });
  const git = new Git();
  const facts = await inspectProject(() => git, f.project);
  const base = await resolveBase(git, facts, undefined);
  const copy = path.join(f.root, 'copy');
  await makeGitCopy(git, facts, { head: base, base, branch: 'run/first' }, copy);
  const ws = await onTheNode(f.project, copy, path.join(f.root, 'node'));
  assert.deepEqual(stepGit(ws, 'log', '--format=%H').trim().split('\n'), [base]);
  assert.equal(stepGit(ws, 'status', '--porcelain'), '');
  assert.equal(stepGit(ws, 'diff', base), '');
});

test('a project of another user: the copy is made as its owner, and is theirs', { skip: process.getuid?.() !== 0 ? 'needs root to act as another user' : false }, async () => {
  const { f, git, facts, base, head, wt } = await setup(3, 1000);
  const copy = path.join(f.root, 'copy');
  await makeGitCopy(git, facts, { head, base, branch: wt.branch }, copy);
  assert.equal((await stat(path.join(copy, 'HEAD'))).uid, 1000);
  const ws = await onTheNode(wt.path, copy, path.join(f.root, 'node'));
  assert.deepEqual(stepGit(ws, 'log', '--format=%s').trim().split('\n'), ['step 2', 'step 1', 'the base']);
});
