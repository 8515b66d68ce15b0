import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AgeHistogram, bytesToFree, parseEntry } from '../../src/cache/prune-plan.js';
import { projectKey } from '../../src/cache/project-key.js';

test('how much goes: nothing under the bound, down to 80% of it above', () => {
  const cases: Array<[number, number, number]> = [
    [0, 100, 0],
    [100, 100, 0],
    [101, 100, 21],
    [1000, 100, 920],
  ];
  for (const [total, max, want] of cases) assert.equal(bytesToFree(total, max), want, `${total}/${max}`);
});

test('find lines are read as mtime and bytes on disk; anything else is passed over', () => {
  assert.deepEqual(parseEntry('1732480000.5 8'), { mtime: 1732480000.5, bytes: 4096 });
  assert.deepEqual(parseEntry('-5 0'), { mtime: -5, bytes: 0 });
  for (const bad of ['', 'x 8', '1 2 3', '1.2.3 8']) assert.equal(parseEntry(bad), undefined, bad);
});

test('the cutoff: the oldest entries first, until enough bytes are freed', () => {
  // entries at t = 0..9, 10 bytes each
  const h = new AgeHistogram(0, 9, 10);
  for (let t = 0; t < 10; t++) h.add(t, 10);
  const cases: Array<[number, number]> = [
    [1, 0.9], // the first bucket ends just before t = 1
    [10, 0.9],
    [11, 1.8],
    [50, 4.5],
    [100, 9],
    [1000, 9], // nothing less will do: everything
  ];
  for (const [free, want] of cases) assert.ok(Math.abs(h.cutoff(free) - want) < 1e-6, `free ${free}: ${h.cutoff(free)}`);
});

test('one time for every entry (a step that set them all alike), or a million distinct ones, keep memory bounded', () => {
  const same = new AgeHistogram(5, 5);
  same.add(5, 100);
  assert.equal(same.cutoff(50), 5);
  const many = new AgeHistogram(0, 1e6, 1024);
  for (let t = 0; t < 1e6; t += 1) many.add(t, 1);
  const c = many.cutoff(500_000);
  assert.ok(c >= 500_000 && c < 500_000 + 1e6 / 1024 + 1, String(c));
});

test('a project\'s caches are named by its real path: two projects never share one', () => {
  assert.match(projectKey('/srv/app'), /^app-[0-9a-f]{16}$/);
  assert.notEqual(projectKey('/srv/a/app'), projectKey('/srv/b/app'));
  assert.equal(projectKey('/srv/app'), projectKey('/srv/app'));
  assert.match(projectKey('/'), /^project-/);
  assert.match(projectKey('/x/..hidden name'), /^hidden_name-/);
});
