/** What a delivery could still do, as every door shows it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { offers } from '../../src/runs/preview.js';

test('after a merge into the branch checked out there is nothing to apply; after one into every branch, nothing to merge', () => {
  assert.deepEqual(offers({ branches: ['main', 'dev'], mergedInto: [], currentBranch: 'main' }), {});
  const one = offers({ branches: ['main', 'dev'], mergedInto: ['main'], currentBranch: 'main' });
  assert.equal(one.mergeWhy, undefined, 'dev can still take it');
  assert.equal(one.applyWhy, "the branch checked out, main, holds this run's work already: there is nothing to apply");
  const all = offers({ branches: ['main', 'dev'], mergedInto: ['main', 'dev'], currentBranch: 'dev' });
  assert.match(all.mergeWhy!, /^every branch of the project \(main, dev\) holds this run's work already: there is nothing to merge$/);
  assert.ok(all.applyWhy);
  assert.deepEqual(offers({ branches: [], mergedInto: [], currentBranch: null }), {}, 'a project whose branches cannot be read offers what the server will judge');
});
