import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isolationOption } from '../../src/cli/isolation-option.js';

test('--isolation wins over RUNNER_ISOLATION; neither leaves it to the file', () => {
  assert.deepEqual(isolationOption('gvisor', { RUNNER_ISOLATION: 'runc' }), { isolation: 'gvisor' });
  assert.deepEqual(isolationOption(undefined, { RUNNER_ISOLATION: 'gvisor' }), { isolation: 'gvisor' });
  assert.deepEqual(isolationOption(undefined, { RUNNER_ISOLATION: '' }), {});
  assert.deepEqual(isolationOption(undefined, {}), {});
  assert.throws(() => isolationOption('kata', {}), /--isolation takes runc or gvisor, got "kata"/);
  assert.throws(() => isolationOption(undefined, { RUNNER_ISOLATION: 'GVISOR' }), /RUNNER_ISOLATION takes runc or gvisor/);
});
