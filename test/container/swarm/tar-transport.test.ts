/**
 * What the swarm transport decides before anything reaches an engine: what it refuses, what it says a swarm step
 * cannot have, and where a step's gateway runs. The transfer itself is test/integration/transfer-helper.test.ts's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContainerError } from '../../../src/common/errors.js';
import type { ContainerRuntime, ContainerSpec } from '../../../src/container/runtime.js';
import { TarTransport, type TarTransportNeeds } from '../../../src/container/swarm/tar-transport.js';

function transport(calls: string[], helperProblem?: Error): TarTransport {
  const needs: TarTransportNeeds = {
    address: async () => '192.0.2.10',
    manager: {} as ContainerRuntime,
    helper: {
      check: async () => {
        calls.push('check');
        if (helperProblem) throw helperProblem;
      },
      bytes: async () => {
        calls.push('bytes');
        return Buffer.from('\x7fELF');
      },
    },
    startRelay: async () => assert.fail('no relay for a step refused'),
  };
  return new TarTransport(needs);
}

test('before a run: the helper is checked, and a step under gVisor is refused saying where it can run', async () => {
  const calls: string[] = [];
  const t = transport(calls);
  await t.checkRun([{ id: 'build', isolation: 'runc' }]);
  assert.deepEqual(calls, ['check']);
  await assert.rejects(t.checkRun([{ id: 'build', isolation: 'runc' }, { id: 'probe', isolation: 'gvisor' }]), (err: unknown) => {
    assert.ok(err instanceof ContainerError);
    assert.equal(err.code, 'swarm_unsupported');
    assert.match(err.message, /^step probe \(isolation: gvisor: a swarm service cannot name a runtime\) cannot run on --engine swarm yet .*run it on the local engine/);
    return true;
  });
});

test("a gateway image without this runner's helper refuses the run before any step", async () => {
  const stale = new ContainerError('image_stale', 'image runner/gateway:latest holds other gateway code than this runner');
  await assert.rejects(transport([], stale).checkRun([{ id: 'build', isolation: 'runc' }]), stale);
});

test("a swarm step cannot mount the runner's disk: said for its caches", () => {
  assert.equal(transport([]).noHostMounts, "on --engine swarm (a step on another node cannot mount the runner's disk)");
});

test('gateways run on the manager, a new overlay name per try, tried again after a busy manager', () => {
  const t = transport([]);
  assert.equal(t.gateways.nameFor('runner-r-build.1-gw', 2), 'runner-r-build-1-gw2');
  assert.equal(t.gateways.retryable(new Error('attaching to network failed')), true);
  assert.equal(t.gateways.retryable(new Error('no such image')), false);
});

test('a step on a named network without a gateway is refused before anything is opened', async () => {
  const calls: string[] = [];
  const spec = { name: 's', network: 'corp-net', cmd: ['true'], mounts: [], labels: {} } as unknown as ContainerSpec;
  await assert.rejects(transport(calls).prepare(spec, { workspace: '/w', io: '/io', owner: { uid: 1, gid: 1 } }), /network: corp-net cannot be used on --engine swarm/);
  assert.deepEqual(calls, []);
});
