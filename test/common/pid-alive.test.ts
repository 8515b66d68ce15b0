import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { pidAlive } from '../../src/common/pid-alive.js';

test('a pid is alive while its process runs: this one yes, an ended one and nonsense no', () => {
  assert.equal(pidAlive(process.pid), true);
  const ended = spawnSync(process.execPath, ['-e', '0']).pid;
  assert.equal(pidAlive(ended), false);
  for (const bad of [0, -1, 1.5, Number.NaN]) assert.equal(pidAlive(bad), false, String(bad));
});
