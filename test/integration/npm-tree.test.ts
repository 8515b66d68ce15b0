/**
 * The npm cache's installed trees, played with the real npm in runner/toolchain (no network: the project's one
 * dependency is a tarball in the project, with an install script that stamps the time it ran): a second `npm ci`
 * of the same lockfile restores the tree the first kept (the stamp is the first run's; the project's own prepare
 * script still runs), a changed lockfile installs with npm, a project without a lockfile is served too, and a step
 * that may not write the cache keeps nothing, whatever it plants.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** A dependency tarball in the project's vendor/: its install script writes a stamp no two installs share. */
async function packDependency(f: Fixture, version: string): Promise<string> {
  const src = path.join(f.project, '..', `dep-src-${version}`);
  await mkdir(src, { recursive: true });
  await writeFile(path.join(src, 'package.json'), JSON.stringify({ name: 'stamped-dep', version, scripts: { postinstall: "node -e \"require('fs').writeFileSync('stamp', String(process.hrtime.bigint()) + '-' + Math.random())\"" } }));
  await writeFile(path.join(src, 'index.js'), `module.exports = ${JSON.stringify(version)};\n`);
  await mkdir(path.join(f.project, 'vendor'), { recursive: true });
  const name = execFileSync('npm', ['pack', '--silent', '--pack-destination', path.join(f.project, 'vendor')], { cwd: src, encoding: 'utf8' }).trim();
  return `vendor/${name}`;
}

async function nodeProject(f: Fixture, version: string, lockfile: boolean): Promise<void> {
  const tarball = await packDependency(f, version);
  await writeFile(path.join(f.project, 'package.json'), `${JSON.stringify({ name: 'tree-project', version: '1.0.0', private: true, scripts: { prepare: 'echo root-prepare-ran' }, dependencies: { 'stamped-dep': `file:${tarball}` } }, null, 2)}\n`);
  await writeFile(path.join(f.project, '.gitignore'), 'node_modules/\n');
  if (lockfile) execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--offline'], { cwd: f.project, stdio: 'ignore' });
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', `dependency ${version}`);
}

const pipeline = (install: string, cache = '[npm]', extra = '') => `version: 1
name: npm-tree
project: { path: project }
defaults: { image: runner/toolchain:latest, network: none, timeout: 2m, resources: { memory: 1g, cpus: 1, pids: 256 } }
steps:
  - id: verify
    cache: ${cache}
    run: |
      ${install}
      echo "stamp=$(cat node_modules/stamped-dep/stamp) version=$(node -p 'require("stamped-dep")')"
${extra}`;

async function stepLog(f: Fixture, runId: string, step = 'verify'): Promise<string> {
  return readFile(path.join(f.home, 'runs', runId, 'steps', `${step}.log`), 'utf8');
}

async function trees(f: Fixture): Promise<string[]> {
  const root = path.join(f.home, 'caches');
  const [project] = (await readdir(root)).filter((k) => k.startsWith('project-'));
  return (await readdir(path.join(root, project!, 'npm', 'trees')).catch(() => [] as string[])).filter((n) => !n.startsWith('.')).sort();
}

const stampOf = (log: string) => /stamp=(\S+)/.exec(log)?.[1];

test('a second npm ci of the same lockfile restores the tree the first kept; a changed lockfile installs with npm', { timeout: 240_000 }, async () => {
  const f = await fixture();
  await nodeProject(f, '1.0.0', true);
  const file = await writePipeline(f, pipeline('npm ci --no-audit --no-fund'));
  const first = await execPipeline(f, file);
  assert.equal(first.code, 0, first.stderr);
  const log1 = await stepLog(f, first.json.runId);
  assert.match(log1, /cache npm: kept the installed tree of this package-lock\.json/);
  assert.doesNotMatch(log1, /restored from the installed-tree cache/);
  assert.equal((await trees(f)).length, 1);

  const second = await execPipeline(f, file);
  assert.equal(second.code, 0, second.stderr);
  const log2 = await stepLog(f, second.json.runId);
  assert.match(log2, /npm ci: node_modules restored from the installed-tree cache for this lockfile .*npm did not install/);
  assert.equal(stampOf(log2), stampOf(log1), "the dependency's install script did not run again: its tree came from the cache");
  assert.ok(stampOf(log1));
  assert.match(log2, /root-prepare-ran/, "the project's own prepare script runs as npm ci would run it");
  assert.match(log2, /version=1\.0\.0/);

  // a new lockfile: npm installs (from the tarball), and its tree is kept beside the first
  await nodeProject(f, '1.0.1', true);
  const third = await execPipeline(f, file);
  assert.equal(third.code, 0, third.stderr);
  const log3 = await stepLog(f, third.json.runId);
  assert.doesNotMatch(log3, /restored from the installed-tree cache/);
  assert.match(log3, /version=1\.0\.1/);
  assert.notEqual(stampOf(log3), stampOf(log1));
  assert.equal((await trees(f)).length, 2);

  // RUNNER_NPM_TREE=off: npm's own, though a tree is kept for this lockfile
  const off = await execPipeline(f, await writePipeline(f, pipeline('RUNNER_NPM_TREE=off npm ci --no-audit --no-fund'), 'off.yaml'));
  assert.equal(off.code, 0, off.stderr);
  const logOff = await stepLog(f, off.json.runId);
  assert.doesNotMatch(logOff, /restored from the installed-tree cache/);
  assert.notEqual(stampOf(logOff), stampOf(log3));
});

test('a project without a lockfile: npm install --no-package-lock is restored from the tree the first run kept', { timeout: 180_000 }, async () => {
  const f = await fixture();
  await nodeProject(f, '2.0.0', false);
  const file = await writePipeline(f, pipeline('npm install --no-audit --no-fund --no-package-lock'));
  const first = await execPipeline(f, file);
  assert.equal(first.code, 0, first.stderr);
  const log1 = await stepLog(f, first.json.runId);
  assert.match(log1, /kept the installed tree of this package\.json \(no lockfile: used for 24 h\)/);
  const second = await execPipeline(f, file);
  assert.equal(second.code, 0, second.stderr);
  const log2 = await stepLog(f, second.json.runId);
  assert.match(log2, /npm install: node_modules restored from the installed-tree cache for this package\.json \(no lockfile: kept for 24 h\)/);
  assert.equal(stampOf(log2), stampOf(log1));
});

test('a step that may not write the npm cache keeps no tree, whatever it plants: the trees are read-only to it and its mark is not read', { timeout: 180_000 }, async () => {
  const f = await fixture();
  await nodeProject(f, '3.0.0', true);
  // the hostile step: installs, plants code in node_modules, forges the mark and writes into the trees
  const hostile = pipeline(
    `npm ci --no-audit --no-fund
      echo 'require("fs").writeFileSync("/tmp/pwned", "1")' > node_modules/stamped-dep/index.js
      echo "mark=\${RUNNER_NPM_TREE_MARK:-unset}"
      printf '%s' '{"key":"${'a'.repeat(64)}","mode":"lockfile","lockfile":"package-lock.json","lockSha":null,"pkgSha":"${'b'.repeat(64)}","npmrcSha":null}' > /home/agent/.runner/npm-tree.json
      if mkdir "$RUNNER_NPM_TREES/planted" 2>/dev/null; then echo trees-written; else echo trees-read-only; fi`,
    '{ npm: ro }',
  );
  const r = await execPipeline(f, await writePipeline(f, hostile));
  assert.equal(r.code, 0, r.stderr);
  const log = await stepLog(f, r.json.runId);
  assert.match(log, /mark=unset/, 'a step that may not write the cache is not asked for a mark');
  assert.match(log, /trees-read-only/);
  assert.doesNotMatch(log, /kept the installed tree/);
  assert.deepEqual(await trees(f), [], 'nothing kept');

  // the next trusted run installs with npm: nothing planted reaches it
  const next = await execPipeline(f, await writePipeline(f, pipeline('npm ci --no-audit --no-fund'), 'next.yaml'));
  assert.equal(next.code, 0, next.stderr);
  const logNext = await stepLog(f, next.json.runId);
  assert.doesNotMatch(logNext, /restored from the installed-tree cache/);
  assert.match(logNext, /version=3\.0\.0/);
});

test('a tree is kept only as npm installed it, and restored only for an install that would make the same: npm uninstall after the install, NODE_ENV=production', { timeout: 240_000 }, async () => {
  const f = await fixture();
  await nodeProject(f, '1.0.0', true);
  // the same step changes the tree after npm ci: it is not what the key (this lockfile, these flags) says
  const pruned = await execPipeline(f, await writePipeline(f, pipeline('npm ci --no-audit --no-fund && npm uninstall --no-save --no-audit --no-fund stamped-dep'), 'pruned.yaml'));
  assert.equal(pruned.code, 0, pruned.stderr);
  assert.match(await stepLog(f, pruned.json.runId), /cache npm: node_modules changed after npm installed .*: the installed tree is not kept/);
  assert.deepEqual(await trees(f), []);
  // NODE_ENV=production (npm omits devDependencies then): its tree is kept, and never given to an install without it
  const prod = await execPipeline(f, await writePipeline(f, pipeline('NODE_ENV=production npm ci --no-audit --no-fund'), 'prod.yaml'));
  assert.equal(prod.code, 0, prod.stderr);
  assert.match(await stepLog(f, prod.json.runId), /cache npm: kept the installed tree/);
  const dev = await execPipeline(f, await writePipeline(f, pipeline('npm ci --no-audit --no-fund'), 'dev.yaml'));
  assert.equal(dev.code, 0, dev.stderr);
  assert.doesNotMatch(await stepLog(f, dev.json.runId), /restored from the installed-tree cache/);
  assert.equal((await trees(f)).length, 2);
});
