import assert from 'node:assert/strict';
import { test } from 'node:test';
import { changeCounts, cutChanges, type Change } from '../../src/workspace/snapshot.js';

const files = (prefix: string, n: number): Change[] => Array.from({ length: n }, (_, i) => ({ path: `${prefix}${i}`, type: 'file', size: 1 }));

test('a change list over the cap keeps its first entries, the counts of all, and where the rest is', () => {
  const all = { added: files('a', 7), modified: files('m', 2), deleted: files('d', 3) };
  const cut = cutChanges(all, 8, 'steps/s.changes.jsonl');
  assert.deepEqual(cut.added.map((c) => c.path), all.added.map((c) => c.path));
  assert.deepEqual(cut.modified.map((c) => c.path), ['m0']);
  assert.deepEqual(cut.deleted, []);
  assert.deepEqual(cut.cut, { added: 7, modified: 2, deleted: 3, file: 'steps/s.changes.jsonl' });
  assert.deepEqual(changeCounts(cut), { added: 7, modified: 2, deleted: 3 });
});

test('a list within the cap is kept as it is', () => {
  const all = { added: files('a', 2), modified: [], deleted: files('d', 1) };
  assert.equal(cutChanges(all, 3, 'x'), all);
  assert.deepEqual(changeCounts(all), { added: 2, modified: 0, deleted: 1 });
});
