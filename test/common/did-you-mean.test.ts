import assert from 'node:assert/strict';
import { test } from 'node:test';
import { closest, editDistance } from '../../src/common/did-you-mean.js';

test('edit distance and the closest candidate', () => {
  assert.equal(editDistance('kitten', 'sitting'), 3);
  assert.equal(closest('imgae', ['image', 'run', 'command']), 'image');
  assert.equal(closest('timout', ['timeout', 'env']), 'timeout');
  assert.equal(closest('zzz', ['image', 'run']), undefined);
});
