/**
 * What the swarm transport decides before anything reaches an engine: what it refuses, what it says a swarm step
 * cannot have, and where a step's gateway runs. The transfer itself is test/integration/transfer-helper.test.ts's.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ContainerError } from '../../../src/common/errors.js';
import type { HeldGateway } from '../../../src/gateway/host/step-gateway.js';
import type { ContainerRuntime, ContainerSpec } from '../../../src/container/runtime.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { TarTransport, type TarTransportNeeds } from '../../../src/container/swarm/tar-transport.js';

function transport(calls: string[], helperProblem?: Error, more: Partial<TarTransportNeeds> = {}): TarTransport {
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
    relayOn: () => assert.fail('no relay for a step refused'),
    ...more,
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

test('a step with network: none takes a warm gateway as its relay when the pool has one (none started), and says so; without one it starts its own', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-tar-warm-'));
  try {
    const held = { ended: () => false } as unknown as HeldGateway;
    const used: string[] = [];
    const relay = (network: string) => ({ network, dns: ['10.9.0.2'], address: { host: '10.9.0.2', port: 7000 }, close: async () => void used.push(`closed ${network}`) });
    const t = transport([], undefined, {
      relayOn: (h, to) => (used.push(`warm ${h === held} ${to.host}`), relay('warm-net')),
      startRelay: async ({ to }) => (used.push(`cold ${to.host}`), relay('cold-net')),
    });
    const spec = { name: 's', network: 'none', cmd: ['true'], mounts: [], labels: {}, files: [] } as unknown as ContainerSpec;
    const notes: string[] = [];
    const where = { workspace: path.join(dir, 'w'), io: path.join(dir, 'io'), owner: { uid: 0, gid: 0 }, note: (n: string) => notes.push(n) };
    const warm = await t.prepare(spec, { ...where, warm: { takeForRelay: async () => held } });
    assert.equal(warm.spec.network, 'warm-net');
    assert.deepEqual(warm.spec.dns, ['10.9.0.2']);
    // the step's helper fetches through its relay, never from the runner's address
    assert.deepEqual(warm.spec.cmd.slice(1, 3), ['10.9.0.2', '7000']);
    assert.match(notes.join('\n'), /relay: a warm gateway, made ahead for no step in particular and given to this one alone/);
    const cold = await t.prepare(spec, { ...where, warm: { takeForRelay: async () => undefined } });
    assert.equal(cold.spec.network, 'cold-net');
    assert.deepEqual(used, ['warm true 192.0.2.10', 'cold 192.0.2.10']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
