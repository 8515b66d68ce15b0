import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { AgentUsage } from '../../../src/agents/preset.js';
import type { ContainerSpec } from '../../../src/container/runtime.js';
import { mergeReports, specWith, stepStatus } from '../../../src/run/step-addons/compose.js';

const base: ContainerSpec = {
  name: 'runner-r1-build.1',
  image: 'alpine',
  cmd: ['true'],
  env: { STEP: 'own', SHARED: 'step' },
  workingDir: '/home/agent/workspace',
  user: '1000:1000',
  mounts: [{ source: '/w', target: '/home/agent/workspace', readOnly: false }],
  memoryBytes: 1,
  cpus: 1,
  pids: 10,
  openFiles: 10,
  fileSizeBytes: 1,
  readOnlyRoot: false,
  capAdd: [],
  network: 'none',
  labels: {},
};

const usage = (u: Partial<AgentUsage>): AgentUsage => ({ model: null, inputTokens: null, outputTokens: null, cacheReadTokens: null, cacheWriteTokens: null, costUsd: null, turns: null, sessionId: null, ...u });

test('a step with no add-on parts is its own container', () => {
  const { spec, way } = specWith(base, [{}, {}]);
  assert.deepEqual(spec, base);
  assert.equal(way, undefined);
});

test("env: defaults under the step's own, an add-on's env over it; mounts and files after the step's, in the add-ons' order", () => {
  const { spec } = specWith(base, [
    { env: { SHARED: 'cache', CACHE: '1' }, mounts: [{ source: '/c', target: '/cache', readOnly: false }] },
    { envDefaults: { SHARED: 'company', STEP: 'company', CA: '1' }, mounts: [{ source: '/ca', target: '/run/runner/ca.pem', readOnly: true }], files: [{ target: '/run/runner/ca.pem', data: 'pem', secret: false }] },
  ]);
  assert.deepEqual(spec.env, { STEP: 'own', SHARED: 'cache', CACHE: '1', CA: '1' });
  assert.deepEqual(spec.mounts.map((m) => m.target), ['/home/agent/workspace', '/cache', '/run/runner/ca.pem']);
  assert.deepEqual(spec.files, [{ target: '/run/runner/ca.pem', data: 'pem', secret: false }]);
});

test("a way replaces the plan's network, with its name servers and hosts; the holds are one", async () => {
  let release!: () => void;
  const up = new Promise<void>((r) => (release = r));
  const way = { network: 'runner-r1-gw-net', dns: ['10.0.0.2'], hosts: { 'runner-gateway': '10.0.0.2' }, relay: { host: '10.0.0.2', port: 8099 } };
  const { spec, way: given } = specWith(base, [{ way, holdUntil: up }, { holdUntil: Promise.resolve() }]);
  assert.equal(spec.network, 'runner-r1-gw-net');
  assert.deepEqual(spec.dns, ['10.0.0.2']);
  assert.deepEqual(spec.hosts, { 'runner-gateway': '10.0.0.2' });
  assert.deepEqual(given, way);
  let held = true;
  void spec.holdUntil!.then(() => (held = false));
  await new Promise((r) => setTimeout(r, 10));
  assert.equal(held, true, 'the command waits for every hold');
  release();
  await spec.holdUntil;
  assert.equal(held, false);
});

test('reports: a later-closed usage replaces an earlier one, problems in the order the add-ons opened', () => {
  // closed in reverse: transport, agent, gateway
  const r = mergeReports([
    { problems: ['the work did not come back'] },
    { usage: usage({ turns: 3 }), outputs: { result: 'Done.' }, problems: ['the agent said no'] },
    undefined,
    { usage: usage({ inputTokens: 10 }), status: 'budget_exhausted', error: 'gateway_failed', egress: { refused: [{ host: 'x', count: 1 }] }, problems: ['budget exhausted'] },
  ]);
  assert.deepEqual(r.usage, usage({ inputTokens: 10 }));
  assert.deepEqual(r.problems, ['budget exhausted', 'the agent said no', 'the work did not come back']);
  assert.deepEqual(r.outputs, { result: 'Done.' });
  assert.equal(r.error, 'gateway_failed');
  assert.deepEqual(r.egress, { refused: [{ host: 'x', count: 1 }] });
  assert.deepEqual([...r.said], ['budget_exhausted']);
});

test("status: an add-on's budget over all, then the engine's problem, then an add-on's failure, then the exit", () => {
  const exit = { reason: 'exit' as const, exitCode: 0, oomKilled: false };
  const lost = { ...exit, exitCode: 137, problem: { status: 'node_lost' as const, message: 'node gone' } };
  assert.equal(stepStatus(exit, new Set()), 'completed');
  assert.equal(stepStatus(exit, new Set(['failed'])), 'failed');
  assert.equal(stepStatus(lost, new Set(['failed'])), 'node_lost');
  assert.equal(stepStatus(lost, new Set(['budget_exhausted'])), 'budget_exhausted');
  assert.equal(stepStatus({ reason: 'timeout', exitCode: 137, oomKilled: false }, new Set(['failed'])), 'failed');
  assert.equal(stepStatus({ reason: 'timeout', exitCode: 137, oomKilled: false }, new Set()), 'timed_out');
  // an engine's problem counts only for a container that exited by itself
  assert.equal(stepStatus({ ...lost, reason: 'canceled' }, new Set()), 'canceled');
});
