/**
 * A directory made ahead takes another's place (take-place.ts): it then holds every entry the other held (links
 * as links, nothing followed), with its mode and owner, at its path, the same inode as before (a container that
 * mounted it sees the step's directory); on another filesystem, or over a slot that is not empty, nothing moves.
 */
import assert from 'node:assert/strict';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { takePlace } from '../../src/workspace/take-place.js';

async function dirs(): Promise<{ root: string; target: string; slot: string }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'take-place-'));
  const target = path.join(root, 'worktree');
  const slot = path.join(root, 'warm', 'workspace');
  await mkdir(target);
  await mkdir(slot, { recursive: true });
  return { root, target, slot };
}

test('the slot takes the target\'s place: its entries, mode and owner, at its path; the slot\'s inode is the one there now', async () => {
  const { root, target, slot } = await dirs();
  await writeFile(path.join(target, 'a.txt'), 'a');
  await mkdir(path.join(target, 'sub', 'deep'), { recursive: true });
  await writeFile(path.join(target, 'sub', 'deep', 'b'), 'b');
  await writeFile(path.join(target, '.git'), 'gitdir: /somewhere\n');
  await symlink('/etc/passwd', path.join(target, 'link'));
  await writeFile(path.join(target, 'odd\nname'), 'x');
  await chmod(target, 0o751);
  const slotIno = (await lstat(slot)).ino;
  const id = await takePlace(target, slot);
  const st = await lstat(target);
  assert.equal(st.ino, slotIno, 'the directory at the target is the slot');
  assert.equal(id.ino, slotIno);
  assert.equal(st.mode & 0o7777, 0o751);
  assert.deepEqual((await readdir(target)).sort(), ['.git', 'a.txt', 'link', 'odd\nname', 'sub'].sort());
  assert.equal(await readFile(path.join(target, 'sub', 'deep', 'b'), 'utf8'), 'b');
  assert.equal(await readlink(path.join(target, 'link')), '/etc/passwd', 'a link moves as a link');
  assert.deepEqual(await readdir(path.dirname(slot)), [], 'the slot is gone from where it was');
  assert.deepEqual((await readdir(root)).sort(), ['warm', 'worktree'], 'nothing staged is left beside it');
  await rm(root, { recursive: true });
});

test('a slot that is not empty is refused, and nothing of the target moves', async () => {
  const { root, target, slot } = await dirs();
  await writeFile(path.join(target, 'a.txt'), 'a');
  await writeFile(path.join(slot, 'planted'), 'x');
  const before = (await lstat(target)).ino;
  await assert.rejects(takePlace(target, slot), /not an empty directory/);
  assert.equal((await lstat(target)).ino, before);
  assert.deepEqual(await readdir(target), ['a.txt']);
  await rm(root, { recursive: true });
});

test('a target that is a link is refused', async () => {
  const { root, target, slot } = await dirs();
  const link = path.join(root, 'link');
  await symlink(target, link);
  await assert.rejects(takePlace(link, slot), /not a directory/);
  await rm(root, { recursive: true });
});

test('on another filesystem (/dev/shm) the first rename fails: nothing of the target moved, the slot is where it was', async () => {
  const { root, target } = await dirs();
  const other = await mkdtemp('/dev/shm/take-place-');
  const slot = path.join(other, 'workspace');
  await mkdir(slot);
  await writeFile(path.join(target, 'a.txt'), 'a');
  await assert.rejects(takePlace(target, slot), /EXDEV/);
  assert.deepEqual(await readdir(target), ['a.txt']);
  assert.deepEqual(await readdir(other), ['workspace']);
  await rm(root, { recursive: true });
  await rm(other, { recursive: true });
});
