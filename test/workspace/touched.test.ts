/** What a run touched in a worktree, decided from the entries' facts alone. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { planCleanup, touchedBy, type EntryFacts } from '../../src/workspace/touched.js';

const owner = { uid: 1000, gid: 1000 };
const since = 1_000_000;
const e = (rel: string, type: EntryFacts['type'] = 'file', o: Partial<EntryFacts> = {}): EntryFacts => ({ rel, type, ctimeMs: since - 5000, atimeMs: since - 5000, uid: 1000, gid: 1000, nlink: 1, ...o });

test('touched: changed at or after the hand-over, read after it (files), another owner, a second link, a special file', () => {
  assert.equal(touchedBy(e('a'), since, owner), false);
  assert.equal(touchedBy(e('a', 'file', { ctimeMs: since }), since, owner), true, 'a coarse clock: equal counts');
  assert.equal(touchedBy(e('a', 'file', { atimeMs: since + 1 }), since, owner), true, 'a file read after the hand-over');
  assert.equal(touchedBy(e('d', 'dir', { atimeMs: since + 1 }), since, owner), false, 'a directory listed (the runner lists them all)');
  assert.equal(touchedBy(e('a', 'file', { uid: 0 }), since, owner), true);
  assert.equal(touchedBy(e('a', 'file', { nlink: 2 }), since, owner), true);
  assert.equal(touchedBy(e('p', 'other'), since, owner), true);
});

test('a touched directory holding untouched entries is renewed, deepest first; one holding nothing untouched goes whole, with what is under it', () => {
  const t = { ctimeMs: since + 1 };
  const plan = planCleanup(
    [e('', 'dir', t), e('src', 'dir', t), e('src/keep.txt'), e('src/new.txt', 'file', t), e('src/a', 'dir', t), e('src/a/b', 'dir'), e('src/a/b/c.txt'), e('build', 'dir', t), e('build/x', 'dir', t), e('build/x/out', 'file', t)],
    since,
    owner,
  );
  assert.deepEqual(plan.remove, ['src/new.txt', 'build']);
  assert.deepEqual(plan.renew, ['src/a', 'src', '']);
});

test('planning is linear: 200,000 touched entries in a deep tree take well under a second of work per 100,000', () => {
  const entries: EntryFacts[] = [e('', 'dir', { ctimeMs: since + 1 })];
  let dir = '';
  for (let d = 0; d < 200; d++) {
    dir = dir ? `${dir}/d${d}` : `d${d}`;
    entries.push(e(dir, 'dir', { ctimeMs: since + 1 }));
    for (let i = 0; i < 1000; i++) entries.push(e(`${dir}/f${i}`, 'file', { ctimeMs: since + 1 }));
  }
  // the work is this process's CPU time, which other processes on a busy machine do not stretch as they do the clock
  const cpu0 = process.cpuUsage();
  const plan = planCleanup(entries, since, owner);
  const cpu = process.cpuUsage(cpu0);
  const ms = (cpu.user + cpu.system) / 1000;
  assert.deepEqual(plan.remove, ['d0']);
  assert.ok(ms < 5000, `${ms} ms of CPU`);
});
