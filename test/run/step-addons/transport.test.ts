import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mountTransport } from '../../../src/container/local/mount-transport.js';
import type { ContainerRuntime, ContainerSpec, StepTransport, Where } from '../../../src/container/runtime.js';
import type { AddonStep } from '../../../src/run/step-addons/addon.js';
import { transportAddon } from '../../../src/run/step-addons/transport.js';

const spec = { name: 's', cmd: ['true'], mounts: [] } as unknown as ContainerSpec;

/** the run's warm gateways (--warm): the transport hands them on, for a step that needs a relay of its own */
const warm = { takeForRelay: async () => undefined, take: async () => undefined };

function stepIn(ws: { path: string; gitCopy?: (into: string) => Promise<void> }, said: string[], pool?: typeof warm): AddonStep {
  return { c: { ws, spending: pool ? { warm: pool } : {} }, ioDir: '/io', user: { uid: 1000, gid: 1000 }, say: (l: string) => said.push(l) } as unknown as AddonStep;
}

/** A transport that carries the step to "another node": what it was given, and a problem at the finish. */
function farTransport(seen: Where[], problem: string | undefined): StepTransport {
  return {
    ...mountTransport({} as ContainerRuntime),
    prepare: async (s, where) => {
      seen.push(where);
      where.note?.('the copy of its history could not be made');
      return { spec: { ...s, mounts: [], cmd: ['/run/runner/runner-transfer', ...s.cmd] }, finish: async () => problem };
    },
  };
}

test("the transport makes the finished spec over, with the workspace, the gateway's relay and the git copy; its log lines are the step's", async () => {
  const seen: Where[] = [];
  const said: string[] = [];
  const copies: string[] = [];
  const open = await transportAddon(farTransport(seen, undefined)).open(stepIn({ path: '/wt', gitCopy: async (into) => void copies.push(into) }, said, warm));
  const made = await open.reshape!(spec, { network: 'n', relay: { host: '10.0.0.2', port: 8099 } });
  assert.deepEqual(made.cmd, ['/run/runner/runner-transfer', 'true']);
  assert.equal(seen[0]!.workspace, '/wt');
  assert.equal(seen[0]!.io, '/io');
  assert.deepEqual(seen[0]!.owner, { uid: 1000, gid: 1000 });
  assert.deepEqual(seen[0]!.relay, { host: '10.0.0.2', port: 8099 });
  assert.equal(seen[0]!.warm, warm, "the run's warm gateways");
  await seen[0]!.gitCopy!('/staging/git');
  assert.deepEqual(copies, ['/staging/git']);
  assert.deepEqual(said, ['runner: the copy of its history could not be made']);
  assert.equal(await open.close({ reason: 'exit' }), undefined);
});

test("work that did not come back is the step's problem; a workspace without git history gives none to copy", async () => {
  const seen: Where[] = [];
  const open = await transportAddon(farTransport(seen, 'the step\'s work did not come back from its node')).open(stepIn({ path: '/dir' }, []));
  await open.reshape!(spec, undefined);
  assert.equal(seen[0]!.gitCopy, undefined);
  assert.equal(seen[0]!.relay, undefined);
  assert.equal(seen[0]!.warm, undefined, 'no pool, none handed on');
  assert.deepEqual(await open.close({ reason: 'exit' }), { problems: ["the step's work did not come back from its node"] });
});

test('a step whose container was never prepared has nothing to finish', async () => {
  const open = await transportAddon(farTransport([], 'x')).open(stepIn({ path: '/wt' }, []));
  assert.equal(await open.close({ reason: undefined }), undefined);
});
