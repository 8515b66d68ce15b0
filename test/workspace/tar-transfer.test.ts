/**
 * The workspace's way back from a node that is not this machine: a hostile
 * step's tar (the attacks of test/safety, as archive entries) changes nothing
 * outside the directory it is received into.
 */
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, readFile, readlink, rm, stat, symlink, writeFile, chmod } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, test } from 'node:test';
import { pipeline } from 'node:stream/promises';
import tarFs from 'tar-fs';
import tarStream from 'tar-stream';
import { droppedQuietly, entryProblem, packTree, receiveTree, replaceTree, TransferTooBig } from '../../src/workspace/tar-transfer.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));
const tmp = async () => {
  const d = await mkdtemp(path.join(os.tmpdir(), 'runner-tar-'));
  roots.push(d);
  return d;
};
const owner = { uid: process.getuid!(), gid: process.getgid!() };

/** A tar of the given entries, as a hostile step would make it. */
function archive(entries: Array<{ name: string; type?: string; linkname?: string; body?: string; mode?: number; size?: number }>): Readable {
  const pack = tarStream.pack();
  for (const e of entries) {
    const { body, ...header } = e;
    pack.entry({ mode: 0o644, ...header } as tarStream.Header, body ?? '');
  }
  pack.finalize();
  return pack as unknown as Readable;
}

test('a tree goes out and comes back as it was: modes, symlinks, empty directories; .git never travels', async () => {
  const src = await tmp();
  await mkdir(path.join(src, 'sub/empty'), { recursive: true });
  await writeFile(path.join(src, 'run.sh'), '#!/bin/sh\n');
  await chmod(path.join(src, 'run.sh'), 0o755);
  await writeFile(path.join(src, 'sub/a.txt'), 'a\n');
  await symlink('../run.sh', path.join(src, 'sub/link'));
  await symlink('/etc/passwd', path.join(src, 'abs-link'));
  await mkdir(path.join(src, '.git'));
  await writeFile(path.join(src, '.git/config'), 'secret');
  const dest = path.join(await tmp(), 'in');
  const r = await receiveTree(packTree(src), dest, owner);
  assert.deepEqual(r.refused, []);
  assert.equal((await stat(path.join(dest, 'run.sh'))).mode & 0o777, 0o755);
  assert.equal(await readFile(path.join(dest, 'sub/a.txt'), 'utf8'), 'a\n');
  assert.equal(await readlink(path.join(dest, 'sub/link')), '../run.sh');
  assert.equal(await readlink(path.join(dest, 'abs-link')), '/etc/passwd', 'a symlink is data, whatever it points at');
  assert.ok((await stat(path.join(dest, 'sub/empty'))).isDirectory());
  await assert.rejects(lstat(path.join(dest, '.git')));
});

test("a hostile step's tar writes nothing outside, follows no symlink, makes no device, keeps no set-id bit", async () => {
  const outside = await tmp();
  const dest = path.join(await tmp(), 'in');
  const r = await receiveTree(
    archive([
      { name: '../escape.txt', body: 'x' },
      { name: `${outside}/abs.txt`.replace(/^\/+/, '/'), body: 'x' },
      { name: '.git/hooks/post-commit', body: '#!/bin/sh\ntouch /tmp/pwned\n', mode: 0o755 },
      { name: '.git', body: 'gitdir: /etc' },
      { name: 'out', type: 'symlink', linkname: outside },
      { name: 'out/planted.txt', body: 'through the symlink' },
      { name: 'hard', type: 'link', linkname: '/etc/passwd' },
      { name: 'dev', type: 'character-device' },
      { name: 'fifo', type: 'fifo' },
      { name: 'suid', body: '#!/bin/sh\n', mode: 0o4755 },
      { name: 'ok.txt', body: 'fine' },
    ]),
    dest,
    owner,
  );
  assert.equal(await readFile(path.join(dest, 'ok.txt'), 'utf8'), 'fine');
  assert.equal((await stat(path.join(dest, 'suid'))).mode & 0o7777, 0o755, 'no set-id bit');
  assert.equal(await readlink(path.join(dest, 'out')), outside, 'the symlink itself is kept');
  for (const gone of ['escape.txt', '.git', 'hard', 'dev', 'fifo']) await assert.rejects(lstat(path.join(dest, gone)), gone);
  await assert.rejects(lstat(path.join(outside, 'planted.txt')), 'nothing written through the symlink');
  await assert.rejects(lstat(path.join(path.dirname(dest), 'escape.txt')));
  await assert.rejects(lstat(path.join(outside, 'abs.txt')));
  const why = r.refused.join('\n');
  // the step's .git is the copy the runner sent: dropped, and not named as refused
  assert.doesNotMatch(why, /\.git/);
  for (const m of [/\.\.\/escape\.txt: a path with \.\./, /out\/planted\.txt: under out, a symlink/, /hard: a link entry/, /dev: a character-device entry/, /fifo: a fifo entry/]) assert.match(why, m);
});

test('a .git sent with the tree travels as its .git, in place of the worktree\'s own, and is dropped on the way back', async () => {
  const src = await tmp();
  await writeFile(path.join(src, 'a.txt'), 'a\n');
  await writeFile(path.join(src, '.git'), 'gitdir: /the/real/one\n');
  const copy = await tmp();
  await mkdir(path.join(copy, 'refs/heads'), { recursive: true });
  await writeFile(path.join(copy, 'HEAD'), 'ref: refs/heads/main\n');
  // out: the copy as .git, the worktree's own .git file not at all
  const out = await tmp();
  await pipeline(packTree(src, copy), tarFs.extract(out) as unknown as NodeJS.WritableStream);
  assert.equal(await readFile(path.join(out, '.git/HEAD'), 'utf8'), 'ref: refs/heads/main\n');
  assert.ok((await stat(path.join(out, '.git/refs/heads'))).isDirectory());
  assert.equal(await readFile(path.join(out, 'a.txt'), 'utf8'), 'a\n');
  // back: the same tree, .git and all, as the helper sends it, with a hook planted
  await mkdir(path.join(out, '.git/hooks'));
  await writeFile(path.join(out, '.git/hooks/post-commit'), '#!/bin/sh\ntouch /tmp/pwned\n', { mode: 0o755 });
  const back = path.join(await tmp(), 'back');
  const r = await receiveTree(tarFs.pack(out) as unknown as Readable, back, owner);
  assert.deepEqual(r.refused, []);
  assert.equal(r.entries, 2, 'the root and a.txt: nothing under .git is counted');
  await assert.rejects(lstat(path.join(back, '.git')));
});

test('droppedQuietly: the top-level .git and what is under it, nothing else', () => {
  for (const n of ['.git', '.git/config', './.git/hooks/post-commit', '.git/', './/.git/x']) assert.equal(droppedQuietly(n), true, n);
  for (const n of ['a/.git', 'a/.git/config', '.gitignore', '.git-x', '/.git', '.git/../x', '../.git', 'x/../.git']) assert.equal(droppedQuietly(n), false, n);
});

test('past its size or entry count the work is refused, not taken', async () => {
  await assert.rejects(receiveTree(archive([{ name: 'big', body: 'x'.repeat(2000) }]), path.join(await tmp(), 'in'), owner, { maxBytes: 1000, maxEntries: 10 }), TransferTooBig);
  await assert.rejects(receiveTree(archive(Array.from({ length: 20 }, (_, i) => ({ name: `f${i}`, body: '' }))), path.join(await tmp(), 'in'), owner, { maxBytes: 1e6, maxEntries: 10 }), TransferTooBig);
});

test("replaceTree makes the worktree the step's tree, its .git kept", async () => {
  const wt = await tmp();
  await writeFile(path.join(wt, '.git'), 'gitdir: /somewhere\n');
  await writeFile(path.join(wt, 'deleted.txt'), 'old');
  const staged = path.join(await tmp(), 'in');
  await receiveTree(archive([{ name: 'new.txt', body: 'new' }]), staged, owner);
  await replaceTree(wt, staged);
  assert.equal(await readFile(path.join(wt, '.git'), 'utf8'), 'gitdir: /somewhere\n');
  assert.equal(await readFile(path.join(wt, 'new.txt'), 'utf8'), 'new');
  await assert.rejects(lstat(path.join(wt, 'deleted.txt')));
});

test('entryProblem: the rules, as a table', () => {
  const none = new Set<string>();
  assert.equal(entryProblem('a/b.txt', 'file', none), undefined);
  assert.equal(entryProblem('./a', 'directory', none), undefined);
  assert.match(entryProblem('a/../../b', 'file', none)!, /\.\./);
  assert.match(entryProblem('/etc/x', 'file', none)!, /absolute/);
  assert.match(entryProblem('./.git/config', 'file', none)!, /\.git/);
  assert.match(entryProblem('l/x', 'file', new Set(['l']))!, /under l, a symlink/);
  assert.match(entryProblem('x', 'block-device', none)!, /block-device/);
});
