/**
 * removeOrphanContainers: the containers of runs whose runner is gone go; a container of no run (a warm gateway,
 * which has no run id) is left to removeDeadWarmGateways. It once removed those by `run-id=` (no value), which a
 * swarm's service filter takes for any run: every live step of the home on a swarm went with it (found by a trial
 * of `runner serve --engine swarm --warm 2` with `runner runs ls` beside it).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { ContainerRuntime } from '../../src/container/runtime.js';
import { removeOrphanContainers } from '../../src/run/reconcile.js';

test('a container without a run id is not removed (nor anything by an empty run id); a dead run\'s is', async () => {
  const home = await mkdtemp(path.join(os.tmpdir(), 'runner-orphans-'));
  try {
    const asked: Array<Record<string, string>> = [];
    const runtime = {
      listByLabels: async () => [
        { id: 'warm', labels: { 'dev.runner.home': home, 'dev.runner.warm-owner': 'host:1' } },
        { id: 'dead', labels: { 'dev.runner.home': home, 'dev.runner.run-id': 'run-gone' } },
      ],
      removeByLabels: async (labels: Record<string, string>) => (asked.push(labels), 1),
    } as unknown as ContainerRuntime;
    assert.equal(await removeOrphanContainers(runtime, home), 1);
    assert.deepEqual(asked, [{ 'dev.runner.home': home, 'dev.runner.run-id': 'run-gone' }]);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});
