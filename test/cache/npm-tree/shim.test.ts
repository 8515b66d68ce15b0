/**
 * What the installed-tree shim does with an npm command (its pure decision), and how the runner reads the mark a
 * step leaves: which commands a kept tree may answer, what its key depends on, and what it never answers.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseMark } from '../../../src/cache/npm-tree/keep.js';
import type * as Shim from '../../../src/cache/npm-tree/shim.cjs';
import { WRAPPER, wrapper } from '../../../src/cache/npm-tree/files.js';

const { configFiles, decide, realNpm } = createRequire(import.meta.url)('../../../src/cache/npm-tree/shim.cjs') as typeof Shim;

const pkg = Buffer.from(JSON.stringify({ name: 'p', version: '1.0.0', dependencies: { a: '^1.0.0' } }));
const lock = { name: 'package-lock.json', bytes: Buffer.from('{"lockfileVersion":3}') };
const withLock = { packageJson: pkg, lockfile: lock };
const keyOf = (argv: string[], files: Shim.Files = withLock, env: Record<string, string> = {}) => {
  const d = decide(argv, files, env);
  return d.act === 'tree' ? d.key : undefined;
};

test('npm ci with a lockfile, and npm install --no-package-lock without one, may come from a kept tree', () => {
  assert.equal(decide(['ci'], withLock, {}).act, 'tree');
  assert.equal(decide(['clean-install', '--no-audit'], withLock, {}).act, 'tree');
  const manifest = decide(['install', '--no-package-lock'], { packageJson: pkg }, {});
  assert.equal(manifest.act === 'tree' && manifest.mode, 'manifest');
  assert.equal(decide(['i'], { packageJson: pkg }, { npm_config_package_lock: 'false' }).act, 'tree');
});

test("everything else is npm's own: other commands, named packages, global installs, workspaces, an install that would write a lockfile, ci without one, RUNNER_NPM_TREE=off", () => {
  for (const [argv, files, env] of [
    [['test'], withLock, {}],
    [['run', 'build'], withLock, {}],
    [['install', 'left-pad'], withLock, {}],
    [['install', '-g'], withLock, {}],
    [['ci', '--prefix=sub'], withLock, {}],
    [['ci'], { packageJson: pkg }, {}],
    [['install'], { packageJson: pkg }, {}],
    [['ci'], { lockfile: lock }, {}],
    [['ci'], { packageJson: Buffer.from('{not json'), lockfile: lock }, {}],
    [['ci'], { packageJson: Buffer.from(JSON.stringify({ workspaces: ['a'] })), lockfile: lock }, {}],
    [['ci'], withLock, { RUNNER_NPM_TREE: 'off' }],
    [[], withLock, {}],
  ] as Array<[string[], Shim.Files, Record<string, string>]>) {
    assert.equal(decide(argv, files, env).act, 'npm', argv.join(' '));
  }
});

test("a tree's key: the lockfile, package.json, .npmrc, the flags and npm settings that change what is installed, and the image; not the noise", () => {
  const base = keyOf(['ci']);
  assert.ok(base && /^[0-9a-f]{64}$/.test(base));
  assert.equal(keyOf(['ci', '--no-audit', '--no-fund', '--loglevel=warn']), base, 'output flags do not change the tree');
  assert.equal(keyOf(['ci'], withLock, { npm_config_cache: '/x', NPM_CONFIG_FUND: 'false' }), base, 'where the cache is, and fund, do not');
  assert.notEqual(keyOf(['ci', '--omit=dev']), base);
  assert.notEqual(keyOf(['ci', '--ignore-scripts']), base);
  assert.notEqual(keyOf(['ci'], withLock, { NPM_CONFIG_OMIT: 'dev' }), base, 'npm settings in the environment, in either case');
  assert.notEqual(keyOf(['ci'], withLock, { RUNNER_NPM_TREE_IMAGE: 'sha256:other' }), base);
  assert.notEqual(keyOf(['ci'], { ...withLock, npmrc: Buffer.from('omit=dev\n') }), base);
  assert.notEqual(keyOf(['ci'], { ...withLock, lockfile: { ...lock, bytes: Buffer.from('{"lockfileVersion":2}') } }), base);
  assert.notEqual(keyOf(['ci'], { ...withLock, packageJson: Buffer.from('{"name":"q"}') }), base);
  assert.notEqual(keyOf(['ci'], { ...withLock, lockfile: { ...lock, name: 'npm-shrinkwrap.json' } }), base);
});

test('the runner reads a mark only when every field is what the shim writes', () => {
  const good = { key: 'a'.repeat(64), mode: 'lockfile', lockfile: 'package-lock.json', lockSha: 'b'.repeat(64), pkgSha: 'c'.repeat(64), npmrcSha: null, treeSha: 'd'.repeat(64) };
  assert.deepEqual(parseMark(JSON.stringify(good)), good);
  assert.ok(parseMark(JSON.stringify({ ...good, mode: 'manifest', lockfile: null, lockSha: null })));
  for (const bad of [
    { ...good, key: '../../etc' },
    { ...good, key: 'A'.repeat(64) },
    { ...good, mode: 'other' },
    { ...good, lockfile: '../package-lock.json' },
    { ...good, mode: 'manifest' },
    { ...good, pkgSha: 1 },
    { ...good, npmrcSha: 'x' },
    { ...good, treeSha: undefined },
    { ...good, treeSha: '../x' },
  ]) {
    assert.equal(parseMark(JSON.stringify(bad)), undefined, JSON.stringify(bad));
  }
  assert.equal(parseMark('not json'), undefined);
  assert.equal(parseMark('null'), undefined);
});

test("the runner's npm hands every command but an install to the image's npm at once, skipping itself on the PATH", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'npm-wrapper-'));
  try {
    await mkdir(path.join(dir, 'real'));
    await writeFile(path.join(dir, 'npm'), WRAPPER);
    await writeFile(path.join(dir, 'real', 'npm'), '#!/bin/sh\necho "real npm $*"\n', { mode: 0o755 });
    const env = { PATH: `/run/runner/npm-tree/bin::${path.join(dir, 'real')}` };
    assert.equal(execFileSync('/bin/sh', [path.join(dir, 'npm'), 'test', '--', 'a b'], { env, encoding: 'utf8' }), 'real npm test -- a b\n');
    assert.equal(execFileSync('/bin/sh', [path.join(dir, 'npm')], { env, encoding: 'utf8' }), 'real npm \n');
    // an install goes to the shim (not on this machine: node says so), never to the real npm directly
    const install = spawnSync('/bin/sh', [path.join(dir, 'npm'), 'ci'], { env: { PATH: `${path.dirname(process.execPath)}:${path.join(dir, 'real')}` }, encoding: 'utf8' });
    assert.notEqual(install.status, 0);
    assert.match(install.stderr, /\/run\/runner\/npm-tree\/shim\.cjs/);
    const none = spawnSync('/bin/sh', [path.join(dir, 'npm'), 'test'], { env: { PATH: '/run/runner/npm-tree/bin' }, encoding: 'utf8' });
    assert.equal(none.status, 127);
    assert.match(none.stderr, /npm: not found on the PATH after the runner's own/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("the runner's npm and its shim skip their own directory however the PATH spells it (a trailing slash, //, a link): never themselves, in a loop", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'npm-wrapper-'));
  try {
    const bin = path.join(dir, 'bin');
    await mkdir(bin);
    await mkdir(path.join(dir, 'real'));
    await writeFile(path.join(bin, 'npm'), wrapper(bin), { mode: 0o755 });
    await writeFile(path.join(dir, 'real', 'npm'), '#!/bin/sh\necho "real npm $*"\n', { mode: 0o755 });
    await symlink(bin, path.join(dir, 'link'));
    for (const own of [`${bin}/`, `${dir}//bin`, path.join(dir, 'link')]) {
      const PATH = `${own}:${path.join(dir, 'real')}`;
      const r = spawnSync('/bin/sh', [path.join(bin, 'npm'), 'test'], { env: { PATH }, encoding: 'utf8', timeout: 10_000 });
      assert.equal(r.stdout, 'real npm test\n', `${own}: ${r.stderr}${r.error ?? ''}`);
      assert.equal(realNpm({ PATH, RUNNER_NPM_TREE_BIN: bin }), path.join(dir, 'real', 'npm'), own);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

// A tree made for one install must never answer another that would install something else.
test("a tree's key also holds what changes npm's install outside the project: NODE_ENV (npm omits dev dependencies in production) and the user's and global npmrc", () => {
  const base = keyOf(['ci']);
  assert.notEqual(keyOf(['ci'], withLock, { NODE_ENV: 'production' }), base, 'NODE_ENV=production installs no devDependencies');
  assert.notEqual(keyOf(['ci'], { ...withLock, userNpmrc: Buffer.from('omit=dev\n') }), base, "the user's npmrc (~/.npmrc, or npm_config_userconfig's)");
  assert.notEqual(keyOf(['ci'], { ...withLock, globalNpmrc: Buffer.from('omit=dev\n') }), base, "the global npmrc");
  assert.equal(keyOf(['ci'], withLock, { npm_config_userconfig: '/elsewhere/.npmrc' }), base, 'where the user npmrc is, alone, changes nothing: its text does');
});

test('the npmrc files npm reads besides the project\'s are found where npm finds them', async () => {
  const dir = await mkdtemp(path.join(tmpdir(), 'runner-npmrc-'));
  try {
    await writeFile(path.join(dir, '.npmrc'), 'omit=dev\n');
    await writeFile(path.join(dir, 'other'), 'omit=optional\n');
    assert.equal(configFiles({ HOME: dir }).userNpmrc?.toString(), 'omit=dev\n');
    assert.equal(configFiles({ HOME: dir, NPM_CONFIG_USERCONFIG: path.join(dir, 'other') }).userNpmrc?.toString(), 'omit=optional\n');
    assert.equal(configFiles({ HOME: dir, npm_config_globalconfig: path.join(dir, 'other') }).globalNpmrc?.toString(), 'omit=optional\n');
    assert.equal(configFiles({}).userNpmrc, undefined);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
