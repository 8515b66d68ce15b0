import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContainerError } from '../../../src/common/errors.js';
import { labelFilters } from '../../../src/container/local/docker.js';

test('what is removed by its labels names each with a value; a label without one (any value, to a swarm) is refused', () => {
  assert.deepEqual(labelFilters({ 'dev.runner.home': '/h', 'dev.runner.run-id': 'r1' }), ['dev.runner.home=/h', 'dev.runner.run-id=r1']);
  assert.throws(() => labelFilters({ 'dev.runner.home': '/h', 'dev.runner.run-id': '' }), (err: unknown) => err instanceof ContainerError && /dev\.runner\.run-id with no value would match any value/.test(err.message));
});
