import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageError } from '../../src/common/errors.js';
import { MAX_WARM, parseWarm } from '../../src/cli/warm-flag.js';

test('--warm N: 0 to 16 on any engine; absent is 0; anything else is refused saying what it takes', () => {
  assert.equal(parseWarm('serve', undefined), 0);
  assert.equal(parseWarm('serve', ''), 0);
  assert.equal(parseWarm('exec', '2'), 2);
  assert.equal(parseWarm('exec', String(MAX_WARM)), MAX_WARM);
  for (const bad of ['17', '-1', '1.5', 'two', ' 2']) {
    assert.throws(() => parseWarm('serve', bad), (err: unknown) => err instanceof UsageError && /^serve: --warm takes how many step gateways to keep made ahead, 0 to 16, got/.test(err.message), bad);
  }
});
