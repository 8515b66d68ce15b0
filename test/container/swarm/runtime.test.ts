/**
 * What the swarm runtime refuses before it asks the swarm anything, and the manager's images as its engine has them
 * (the swarm lab's tests, test/integration/swarm*.test.ts, run steps on a real swarm).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import Docker from 'dockerode';
import { ContainerError } from '../../../src/common/errors.js';
import type { ContainerRuntime, ContainerSpec } from '../../../src/container/runtime.js';
import { SwarmRuntime } from '../../../src/container/swarm/runtime.js';

const runtime: ContainerRuntime = new SwarmRuntime(new Docker());

test('a step under gVisor, or one that would mount the runner\'s disk, is refused before the swarm is asked', async () => {
  await assert.rejects(runtime.checkIsolation([{ id: 'probe', isolation: 'gvisor', image: 'alpine' }]), /step probe asks for isolation: gvisor, which --engine swarm cannot give/);
  assert.deepEqual(await runtime.checkIsolation([{ id: 'build', isolation: 'runc', image: 'alpine' }]), []);
  const spec = { name: 's', image: 'alpine', isolation: 'runc', mounts: [{ source: '/w', target: '/home/agent/workspace', readOnly: false }] } as unknown as ContainerSpec;
  await assert.rejects(runtime.create(spec), (err: unknown) => err instanceof ContainerError && err.code === 'swarm_mounts');
});

test("the manager's images are this engine's: asked, never pulled", async () => {
  assert.equal(await runtime.hasImage('runner/does-not-exist:never'), false);
  assert.equal(await runtime.imageLabels('runner/does-not-exist:never'), undefined);
});
