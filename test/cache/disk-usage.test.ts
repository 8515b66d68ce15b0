/** Measuring and pruning a cache a step may have booby-trapped: real files, real GNU find. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { diskUsage, pruneToBound } from '../../src/cache/disk-usage.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function tmp(): Promise<string> {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-cache-'));
  roots.push(r);
  return r;
}

/** `n` files of 64 KiB, file i written i days ago (so file n-1 is the oldest). */
async function aged(dir: string, n: number): Promise<void> {
  const now = Date.now() / 1000;
  for (let i = 0; i < n; i++) {
    const sub = path.join(dir, `d${i % 3}`, 'deep');
    await mkdir(sub, { recursive: true });
    const f = path.join(sub, `f${i}`);
    await writeFile(f, Buffer.alloc(64 * 1024, 1));
    await utimes(f, now - i * 86400, now - i * 86400);
  }
}

test('symlinks a step planted are counted as themselves and never followed, by the measure or the prune', async () => {
  const root = await tmp();
  const outside = path.join(root, 'outside');
  await mkdir(outside);
  await writeFile(path.join(outside, 'precious'), Buffer.alloc(1024 * 1024, 7));
  const data = path.join(root, 'data');
  await aged(data, 4);
  await symlink(outside, path.join(data, 'to-dir'));
  await symlink(path.join(outside, 'precious'), path.join(data, 'to-file'));
  const u = await diskUsage(data);
  assert.ok(u.bytes < 1024 * 1024, `the 1 MiB outside is not counted: ${u.bytes}`);
  assert.ok(u.bytes >= 4 * 64 * 1024, String(u.bytes));
  // a bound nothing but everything meets: every link goes as itself
  await pruneToBound(data, 1);
  assert.ok(existsSync(path.join(outside, 'precious')), 'what a link pointed to is still there');
  assert.deepEqual(await readdir(outside), ['precious']);
  assert.ok(!existsSync(path.join(data, 'to-dir')) && !existsSync(path.join(data, 'to-file')));
});

test('over its bound, a cache loses its oldest-written files first and ends under 80% of the bound', async () => {
  const data = path.join(await tmp(), 'data');
  await aged(data, 20);
  const before = await diskUsage(data);
  const max = Math.floor(before.bytes / 2);
  const r = await pruneToBound(data, max);
  assert.equal(r.before, before.bytes);
  assert.ok(r.after <= max * 0.8, `${r.after} <= ${max * 0.8}`);
  const left = (await readdir(data, { recursive: true })).filter((n) => /f\d+$/.test(n)).map((n) => Number(/f(\d+)$/.exec(n)![1]));
  assert.ok(left.length > 0 && left.length < 20, String(left));
  // what is left is the newest: every file kept is younger than every file gone
  assert.equal(Math.max(...left), left.length - 1, `kept ${left.sort((a, b) => a - b)}`);
  // under the bound, nothing moves
  const again = await pruneToBound(data, max);
  assert.equal(again.cutoff, undefined);
  assert.equal(again.after, again.before);
});

test('a missing directory measures as empty', async () => {
  const u = await diskUsage(path.join(await tmp(), 'nothing'));
  assert.equal(u.bytes, 0);
});

test('entries a step dated in the future go first at a prune, and do not outlive the honest ones', async () => {
  const data = path.join(await tmp(), 'data');
  await aged(data, 8);
  const now = Date.now() / 1000;
  const planted = path.join(data, 'planted');
  await writeFile(planted, Buffer.alloc(64 * 1024, 2));
  await utimes(planted, now + 365 * 86400, now + 365 * 86400);
  // the bound takes all but about two files: the planted one goes, though it looks the newest
  const r = await pruneToBound(data, 7 * 64 * 1024 + 16 * 1024);
  assert.ok(r.after < r.before);
  assert.ok(!existsSync(planted), 'the future-dated entry went');
  assert.ok(existsSync(path.join(data, 'd0', 'deep', 'f0')), 'the newest honest entry stays');
});
