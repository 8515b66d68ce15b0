import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mountTransport } from '../../../src/container/local/mount-transport.js';
import type { ContainerRuntime, ContainerSpec } from '../../../src/container/runtime.js';

test("the local engine's transport: the spec as it is (mounts and all), nothing to finish, gateways beside the step", async () => {
  const runtime = {} as ContainerRuntime;
  const t = mountTransport(runtime);
  const spec = { name: 's', mounts: [{ source: '/w', target: '/home/agent/workspace', readOnly: false }] } as unknown as ContainerSpec;
  const prepared = await t.prepare(spec, { workspace: '/w', io: '/io', owner: { uid: 1, gid: 1 }, gitCopy: async () => assert.fail('a mounted step sees the repository itself') });
  assert.equal(prepared.spec, spec);
  assert.equal(await prepared.finish(), undefined);
  assert.equal(t.noHostMounts, undefined);
  await t.checkRun([{ id: 'a', isolation: 'gvisor' }]);
  assert.equal(t.gateways.runtime, runtime);
  assert.equal(await t.gateways.relayTo(), undefined);
  assert.equal(t.gateways.nameFor('runner-r-s.1-gw', 1), 'runner-r-s.1-gw');
  assert.equal(t.gateways.retryable(new Error('context deadline exceeded')), false);
});
