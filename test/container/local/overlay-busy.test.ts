import assert from 'node:assert/strict';
import { test } from 'node:test';
import { overlayBusy } from '../../../src/container/local/docker.js';

test('a network still held by a member is busy (asked again); one gone or refused otherwise is not', () => {
  assert.equal(overlayBusy(new Error('(HTTP code 403) unexpected - error while removing network: network runner-warm-x-net id 8e4pw7egokb4 has active endpoints')), true);
  assert.equal(overlayBusy(new Error('rpc error: code = FailedPrecondition desc = network 8e4pw7egokb4 is in use by task abc')), true);
  assert.equal(overlayBusy(new Error('network runner-warm-x-net not found')), false);
  assert.equal(overlayBusy(new Error('permission denied')), false);
});
