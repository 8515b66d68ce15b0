/** The runner's side of the installed trees: what it keeps after a step, against the workspace as the step left it. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { link, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { keepTree, MAX_TREE_BYTES, MAX_TREE_ENTRIES, MIN_FREE, pruneTrees, tooBig } from '../../../src/cache/npm-tree/keep.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

async function setup() {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-keep-'));
  roots.push(r);
  const ws = path.join(r, 'ws');
  const io = path.join(r, 'io');
  await mkdir(path.join(ws, 'node_modules', 'dep'), { recursive: true });
  await mkdir(path.join(ws, 'node_modules', '.bin'), { recursive: true });
  await mkdir(io);
  await writeFile(path.join(ws, 'package.json'), '{"name":"p"}');
  await writeFile(path.join(ws, 'package-lock.json'), '{"lockfileVersion":3}');
  await writeFile(path.join(ws, 'node_modules', 'dep', 'index.js'), 'module.exports = 1;\n');
  await symlink('../dep/index.js', path.join(ws, 'node_modules', '.bin', 'dep'));
  await writeFile(path.join(ws, 'node_modules', '.package-lock.json'), '{"packages":{"node_modules/dep":{}}}');
  const mark = { key: 'e'.repeat(64), mode: 'lockfile', lockfile: 'package-lock.json', lockSha: sha('{"lockfileVersion":3}'), pkgSha: sha('{"name":"p"}'), npmrcSha: null, treeSha: sha('{"packages":{"node_modules/dep":{}}}') };
  const o = { ioDir: io, workspace: ws, trees: path.join(r, 'trees'), runId: 'run-1', step: 'verify', now: () => new Date('2026-11-27T12:00:00Z'), minFree: { bytes: 0, ratio: 0 } };
  return { r, ws, io, mark, o };
}

test('a tree is kept under its key when the mark holds and the lockfile is the one installed from; symlinks stay links', async () => {
  const { io, mark, o } = await setup();
  assert.equal(await keepTree(o), undefined, 'no mark: no install, nothing said');
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify(mark));
  assert.match((await keepTree(o))!, /^cache npm: kept the installed tree of this package-lock\.json \(.*\): the next npm ci of it restores it$/);
  const tree = path.join(o.trees, mark.key);
  assert.equal(await readFile(path.join(tree, 'node_modules', 'dep', 'index.js'), 'utf8'), 'module.exports = 1;\n');
  assert.equal(await readlink(path.join(tree, 'node_modules', '.bin', 'dep')), '../dep/index.js');
  const meta = JSON.parse(await readFile(path.join(tree, 'meta.json'), 'utf8'));
  assert.equal(meta.run, 'run-1');
  assert.equal(meta.createdAt, '2026-11-27T12:00:00.000Z');
  assert.equal(await keepTree(o), undefined, 'kept already: nothing again');
});

test('nothing is kept when the lockfile changed after the install, when no node_modules was left, or when the mark is not one', async () => {
  const { ws, io, mark, o } = await setup();
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify(mark));
  await writeFile(path.join(ws, 'package-lock.json'), '{"lockfileVersion":3,"edited":true}');
  assert.match((await keepTree(o))!, /package-lock\.json changed after npm installed: the installed tree is not kept/);
  await writeFile(path.join(ws, 'package-lock.json'), '{"lockfileVersion":3}');
  await rm(path.join(ws, 'node_modules'), { recursive: true });
  await symlink('/etc', path.join(ws, 'node_modules'));
  assert.match((await keepTree(o))!, /left no node_modules: nothing to keep/, 'a symlink in its place is not followed');
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify({ ...mark, key: '../../x' }));
  assert.match((await keepTree(o))!, /a mark the runner cannot read/);
  assert.deepEqual(await readdir(o.trees).catch(() => []), []);
});

test('a project keeps its newest trees; copies a crash left half made go once old', async () => {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-keep-'));
  roots.push(r);
  for (let i = 0; i < 5; i++) {
    const dir = path.join(r, String(i).repeat(64));
    await mkdir(dir);
    await writeFile(path.join(dir, 'meta.json'), JSON.stringify({ createdAt: `2026-11-2${i}T00:00:00Z` }));
  }
  await mkdir(path.join(r, '.new-young'));
  assert.equal(await pruneTrees(r, 3), 2);
  assert.deepEqual((await readdir(r)).sort(), ['.new-young', '2'.repeat(64), '3'.repeat(64), '4'.repeat(64)]);
});

// A step that may keep its tree is still hostile (safety.md): its mark is read on the host, bounded, never through a link.
test('a mark that is a FIFO, a link (to a device, or to a mark elsewhere) or a huge file is refused at once, read bounded', { timeout: 20_000 }, async () => {
  const { r, io, mark, o } = await setup();
  const file = path.join(io, 'npm-tree.json');
  execFileSync('mkfifo', [file]);
  assert.match((await keepTree(o))!, /a mark the runner cannot read/, 'a FIFO with no writer would hold the runner forever');
  await rm(file);
  await symlink('/dev/zero', file);
  assert.match((await keepTree(o))!, /a mark the runner cannot read/, 'a link to an endless device would fill the runner\'s memory');
  await rm(file);
  await writeFile(path.join(r, 'elsewhere.json'), JSON.stringify(mark));
  await symlink(path.join(r, 'elsewhere.json'), file);
  assert.match((await keepTree(o))!, /a mark the runner cannot read/, 'a link is not followed, even to a good mark');
  await rm(file);
  await writeFile(file, `${JSON.stringify(mark)}${' '.repeat(64 * 1024 * 1024)}`);
  assert.match((await keepTree(o))!, /a mark the runner cannot read/);
  assert.deepEqual(await readdir(o.trees).catch(() => []), []);
});

test('a lockfile-mode mark without the lockfile\'s sha is not one: a missing or linked lockfile never matches it', async () => {
  const { ws, io, mark, o } = await setup();
  await rm(path.join(ws, 'package-lock.json'));
  await symlink('/etc/hostname', path.join(ws, 'package-lock.json'));
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify({ ...mark, lockSha: null }));
  assert.match((await keepTree(o))!, /a mark the runner cannot read/);
  assert.deepEqual(await readdir(o.trees).catch(() => []), []);
});

test('links inside node_modules (to host files, to directories, absolute) are kept as links, never followed or copied through', async () => {
  const { r, ws, io, mark, o } = await setup();
  await writeFile(path.join(r, 'host-secret'), 'secret\n');
  await symlink(path.join(r, 'host-secret'), path.join(ws, 'node_modules', 'dep', 'secret'));
  await symlink('/etc', path.join(ws, 'node_modules', 'etc'));
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify(mark));
  assert.match((await keepTree(o))!, /kept the installed tree/);
  const tree = path.join(o.trees, mark.key, 'node_modules');
  assert.equal(await readlink(path.join(tree, 'dep', 'secret')), path.join(r, 'host-secret'));
  assert.ok((await lstat(path.join(tree, 'etc'))).isSymbolicLink());
  assert.ok((await lstat(path.join(tree, 'dep', 'secret'))).isSymbolicLink());
  // pruning it removes the links, never what they point at
  assert.equal(await pruneTrees(o.trees, 0), 1);
  assert.equal(await readFile(path.join(r, 'host-secret'), 'utf8'), 'secret\n');
});

test('a tree npm changed after its install (npm prune --omit=dev, uninstall, update) is not kept: it is not what its key says', async () => {
  const { ws, io, mark, o } = await setup();
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify(mark));
  // npm ci, then npm prune --omit=dev in the same step: the tree lost its dev dependencies, npm's record says so
  await rm(path.join(ws, 'node_modules', 'dep'), { recursive: true });
  await writeFile(path.join(ws, 'node_modules', '.package-lock.json'), '{"packages":{}}');
  assert.match((await keepTree(o))!, /node_modules changed after npm installed .*: the installed tree is not kept/);
  await rm(path.join(ws, 'node_modules', '.package-lock.json'));
  assert.match((await keepTree(o))!, /node_modules changed after npm installed/, "npm's record removed");
  assert.deepEqual(await readdir(o.trees).catch(() => []), []);
});

test('a tree is kept only within its bounds (bytes, entries) and while the disk keeps room after it', () => {
  const disk = { freeBytes: 100 * 1024 ** 3, totalBytes: 200 * 1024 ** 3 };
  assert.equal(tooBig({ bytes: 250 * 1024 ** 2, entries: 20_000 }, disk), undefined);
  assert.match(tooBig({ bytes: MAX_TREE_BYTES + 1, entries: 1 }, disk)!, /^it holds 2(\.0)?g, over the 2g a kept tree may$/);
  assert.match(tooBig({ bytes: 1, entries: MAX_TREE_ENTRIES + 1 }, disk)!, /entries, over the 400000/);
  assert.match(tooBig({ bytes: 1024 ** 3, entries: 1 }, { freeBytes: 2.5 * 1024 ** 3, totalBytes: 10 * 1024 ** 3 })!, /^the disk would keep .* free after it/);
  assert.match(tooBig({ bytes: 1024 ** 3, entries: 1 }, { freeBytes: 20 * 1024 ** 3, totalBytes: 500 * 1024 ** 3 }, MIN_FREE)!, /10% of the disk/);
});

test('in a persistent directory no tree is kept: npm install keeps what node_modules held, and after npm ci the step runs what earlier runs left (the mark is its word)', async () => {
  const { io, mark, o } = await setup();
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify({ ...mark, mode: 'manifest', lockfile: null, lockSha: null }));
  assert.match((await keepTree({ ...o, persistent: true }))!, /^cache npm: a persistent directory keeps no installed tree: what the step runs there .* may change node_modules after npm installed it$/);
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify(mark));
  assert.match((await keepTree({ ...o, persistent: true }))!, /a persistent directory keeps no installed tree/, 'a mark that says npm ci is not taken either');
  assert.deepEqual(await readdir(o.trees).catch(() => []), []);
  assert.match((await keepTree(o))!, /^cache npm: kept the installed tree/, 'the same in a worktree of its own is kept');
});

test('special entries in node_modules are copied as what they are, never read or followed: a hard link to a workspace file becomes a copy, a FIFO and a socket stay so (the copy does not wait on them), a name with a newline is kept', async () => {
  const { ws, io, mark, o } = await setup();
  const dep = path.join(ws, 'node_modules', 'dep');
  await writeFile(path.join(ws, 'outside.txt'), 'workspace file\n');
  await link(path.join(ws, 'outside.txt'), path.join(dep, 'linked.js'));
  execFileSync('mkfifo', [path.join(dep, 'fifo')]);
  execFileSync('python3', ['-c', 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])', path.join(dep, 'sock')]);
  await writeFile(path.join(dep, 'a\nb.js'), 'newline\n');
  await writeFile(path.join(io, 'npm-tree.json'), JSON.stringify(mark));
  assert.match((await keepTree(o))!, /^cache npm: kept the installed tree/);
  const kept = path.join(o.trees, mark.key, 'node_modules', 'dep');
  assert.ok((await lstat(path.join(kept, 'fifo'))).isFIFO());
  assert.ok((await lstat(path.join(kept, 'sock'))).isSocket());
  assert.equal(await readFile(path.join(kept, 'a\nb.js'), 'utf8'), 'newline\n');
  const [inWs, inTree] = [await lstat(path.join(ws, 'outside.txt')), await lstat(path.join(kept, 'linked.js'))];
  assert.notEqual(inTree.ino, inWs.ino, 'the kept file is a copy, not a link to what the workspace holds');
  await writeFile(path.join(ws, 'outside.txt'), 'changed after\n');
  assert.equal(await readFile(path.join(kept, 'linked.js'), 'utf8'), 'workspace file\n');
});

