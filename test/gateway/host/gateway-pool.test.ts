/**
 * The warm pool's promises, on a scripted engine (test/fixtures/scripted-gateway.ts): a held gateway gets no config
 * until it is given, and is given once; the pool keeps its size, hands a gateway to one step, makes another behind
 * it, waits for one being made rather than start cold, serves only its own egress, gives its gateways back when
 * idle and removes them at its close. The real engine's part: test/integration/warm-gateways.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { GatewayPool } from '../../../src/gateway/host/gateway-pool.js';
import type { ContainerSpec } from '../../../src/container/runtime.js';
import { warmKey, WarmSteps as RealWarmSteps, type WarmStep, type WarmSteps } from '../../../src/run/warm/warm-steps.js';
import type { HeldContainer } from '../../../src/container/runtime.js';
import { CONTAINER_PATHS } from '../../../src/plan/render.js';
import { holdGateway } from '../../../src/gateway/host/step-gateway.js';
import { readWarmStatuses } from '../../../src/gateway/host/warm-status.js';
import { engine, ScriptedGateway } from '../../fixtures/scripted-gateway.js';

const tick = () => new Promise((r) => setTimeout(r, 20));
/** Waits until `ok()` holds, for as long as a loaded machine may need; throws saying what never came. */
async function eventually(what: string, ok: () => boolean): Promise<void> {
  for (const end = Date.now() + 30_000; !ok(); await tick()) if (Date.now() > end) throw new Error(`never: ${what}`);
}
const gift = { config: { allow: ['api.example.com'], prices: {} }, onEvent: () => undefined };

test('a held gateway: started with no config; given once, its config (with its subnet) goes to its standard input then', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const rt = engine(gw);
  const held = await holdGateway(rt, { name: 'runner-warm-x', labels: {}, egressNetwork: 'bridge' });
  assert.ok(gw.started);
  const stdin = rt.specs[0]!.stdin;
  assert.ok(stdin instanceof Promise, 'its config is not known when it is made');
  let written: string | undefined;
  void (stdin as Promise<string>).then((t) => (written = t));
  await tick();
  assert.equal(written, undefined, 'nothing is written before a step takes it');
  const way = held.give(gift);
  assert.throws(() => held.give(gift), /given once/);
  // written once this machine's addresses are read, however long that takes
  written = await (stdin as Promise<string>);
  assert.deepEqual(JSON.parse(written).allow, ['api.example.com']);
  assert.equal(JSON.parse(written).listenSubnet, '10.99.0.0/24');
  gw.say({ event: 'ready', address: '10.99.0.2' });
  await way.listening;
  assert.deepEqual(way.dns, ['10.99.0.2']);
  await way.close();
  assert.ok(gw.removed);
});

test('a held gateway never given is discarded: its input ends empty, it and its network are removed', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const rt = engine(gw);
  const held = await holdGateway(rt, { name: 'runner-warm-y', labels: {}, egressNetwork: 'bridge' });
  const stdin = rt.specs[0]!.stdin as Promise<string>;
  await held.discard();
  await assert.rejects(stdin);
  assert.ok(gw.removed);
  assert.equal(rt.networks.size, 0);
});

function pool(size: number, idleMs?: number) {
  const made: ScriptedGateway[] = [];
  const rt = engine(() => {
    const g = new ScriptedGateway(`10.99.0.${made.length + 2}`);
    made.push(g);
    return g;
  });
  const p = new GatewayPool(rt, { size, home: '/h', egressNetwork: 'bridge', ...(idleMs ? { idleMs } : {}) });
  return { p, made, rt };
}

test('the pool keeps its size; a take hands one gateway to one step and the pool makes another behind it', async () => {
  const { p, made } = pool(2);
  await p.start();
  await eventually('two warm', () => p.warm === 2);
  const a = await p.take('bridge', undefined);
  const b = await p.take('bridge', undefined);
  assert.ok(a && b && a !== b);
  await eventually('refilled', () => p.warm === 2);
  assert.equal(made.length, 4);
  await p.close();
  assert.equal(p.warm, 0);
  assert.deepEqual(made.slice(2).map((g) => g.removed), [true, true], 'those never given are removed at the close');
  assert.equal(await p.take('bridge', undefined), undefined, 'a closed pool gives none');
});

test('a take when none is ready waits for one being made; another egress network or name servers get none', async () => {
  const { p } = pool(1);
  const first = p.take('bridge', undefined);
  void p.start();
  assert.ok(await first, 'the one being made');
  assert.equal(await p.take('company-egress', undefined), undefined);
  assert.equal(await p.take('bridge', ['10.0.0.53']), undefined);
  await p.close();
});

test('idle for idleMs, the pool gives its gateways back; the next take starts it again', async () => {
  const { p, made } = pool(1, 100);
  await p.start();
  await eventually('one warm', () => p.warm === 1);
  await eventually('given back when idle', () => p.warm === 0);
  await eventually('the given-back gateway removed', () => made[0]!.removed);
  assert.ok(await p.take('bridge', undefined), 'the step after an idle while waits for one made then (as soon as a cold one)');
  await eventually('warm again', () => p.warm === 1);
  await p.close();
});

// A hostile or unlucky engine: a warm gateway dies, or is removed, while it waits for its step.
test('a warm gateway that ended while held is never handed to a step: it is removed, and the step gets one made after it', async () => {
  const { p, made, rt } = pool(1);
  await p.start();
  await tick();
  assert.equal(p.warm, 1);
  made[0]!.exit();
  await tick();
  const got = await p.take('bridge', undefined);
  assert.ok(got, 'one made behind the dead one (as soon as a cold one)');
  assert.ok(made[0]!.removed, 'the dead one is removed, its network with it');
  assert.ok(!rt.networks.has(rt.specs[0]!.name + '-net'));
  assert.equal(made.length, 2);
  const way = got.give(gift);
  made[1]!.say({ event: 'ready', address: '10.99.0.3' });
  await way.listening;
  assert.deepEqual(way.dns, ['10.99.0.3'], "the step's gateway is the live one");
  await way.close();
  await p.close();
});

test('steps taking at once never share a gateway: each held gateway is given to one step, its events to that step alone', async () => {
  const { p, made } = pool(2);
  await p.start();
  await tick();
  const takes = await Promise.all([p.take('bridge', undefined), p.take('bridge', undefined), p.take('bridge', undefined)]);
  const given = takes.filter((h): h is NonNullable<typeof h> => h !== undefined);
  assert.equal(new Set(given).size, given.length, 'no gateway twice');
  assert.ok(given.length >= 2);
  const heard: Array<Array<string>> = given.map(() => []);
  const ways = given.map((h, i) => h.give({ ...gift, onEvent: (e) => heard[i]!.push(JSON.stringify(e)) }));
  await tick();
  // each gateway speaks (after its config, as a real one does): what one says reaches its own step only
  made.slice(0, given.length).forEach((g, i) => g.say({ event: 'error', message: `from ${i}` }));
  await tick();
  for (const [i, lines] of heard.entries()) assert.deepEqual(lines.map((l) => JSON.parse(l).message), [`from ${i}`]);
  for (const w of ways) void w.close();
  await p.close();
});

test('before its step takes it, what a warm gateway says (on stdout or stderr) reaches no step', async () => {
  const { p, made } = pool(1);
  await p.start();
  await tick();
  made[0]!.say({ event: 'error', message: 'said early' });
  await tick();
  const held = await p.take('bridge', undefined);
  const heard: string[] = [];
  const way = held!.give({ ...gift, onEvent: (e) => heard.push(e.event) });
  made[0]!.say({ event: 'ready', address: '10.99.0.2' });
  await way.listening;
  await way.close();
  assert.ok(!heard.includes('error'), 'nothing said before the take is heard');
  await p.close();
});

test('the pool says how many are warm in the home (runner runs reads it), not counting one that died, and removes the file at its close', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'warm-status-'));
  const made: ScriptedGateway[] = [];
  const rt = engine(() => {
    const g = new ScriptedGateway(`10.99.0.${made.length + 2}`);
    made.push(g);
    return g;
  });
  const p = new GatewayPool(rt, { size: 2, home: '/h', egressNetwork: 'bridge', statusDir: dir, command: 'serve' });
  await p.start();
  const said = async () => (await readWarmStatuses(dir)).map((s) => `${s.command} ${s.warm}/${s.size}`).join();
  await eventually('two warm', () => p.warm === 2);
  for (const end = Date.now() + 30_000; (await said()) !== 'serve 2/2'; await tick()) if (Date.now() > end) assert.fail(`never said 2 of 2: ${await said()}`);
  made[0]!.exit();
  await eventually('the dead one not counted', () => p.warm === 1);
  await p.close();
  assert.deepEqual(await readdir(dir), [], 'no status is left after the close');
  await rm(dir, { recursive: true, force: true });
});

// runner runs reads the file, not the pool: a gateway that dies while it waits (and that no step takes) is not
// counted there either, and the pool makes another behind it without waiting for a step.
test('a warm gateway that dies while no step comes: the status file stops counting it, and the pool removes it and makes another', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'warm-status-'));
  const made: ScriptedGateway[] = [];
  let engineUp = true;
  const rt = engine(() => {
    if (!engineUp) throw new Error('the engine is down');
    const g = new ScriptedGateway(`10.99.0.${made.length + 2}`);
    made.push(g);
    return g;
  });
  // not idle within the test (40 s); its timer looks every idleMs / 4 (10 s here; at most every minute)
  const p = new GatewayPool(rt, { size: 2, home: '/h', egressNetwork: 'bridge', statusDir: dir, command: 'serve', idleMs: 40_000 });
  await p.start();
  const said = async () => (await readWarmStatuses(dir)).map((s) => `${s.command} ${s.warm}/${s.size}`).join();
  for (const end = Date.now() + 30_000; (await said()) !== 'serve 2/2'; await tick()) if (Date.now() > end) assert.fail(`never said 2 of 2: ${await said()}`);
  engineUp = false;
  made[0]!.exit();
  for (const end = Date.now() + 30_000; (await said()) !== 'serve 1/2'; await tick()) if (Date.now() > end) assert.fail(`the file still says ${await said()} with one of them dead`);
  await eventually('the dead one removed without a take', () => made[0]!.removed);
  engineUp = true;
  await eventually('another made behind it', () => made.length === 3 && p.warm === 2);
  for (const end = Date.now() + 30_000; (await said()) !== 'serve 2/2'; await tick()) if (Date.now() > end) assert.fail(`never said 2 of 2 again: ${await said()}`);
  await p.close();
  await rm(dir, { recursive: true, force: true });
});

/** Warm steps that make a fake container per call, of the shape last learned, and say what became of each. */
function fakeSteps() {
  let shape: string | undefined;
  const made: Array<{ network: string; shape: string; discarded: boolean }> = [];
  const steps = {
    learn: (s: ContainerSpec) => {
      const changed = s.image !== shape;
      shape = s.image;
      return changed;
    },
    get knows() {
      return shape !== undefined;
    },
    get shapes() {
      return shape === undefined ? [] : [shape];
    },
    failing: false,
    make: async (way: { network: string }, _name: string, wanted?: string) => {
      await tick();
      if (steps.failing) return undefined;
      const m = { network: way.network, shape: wanted ?? shape!, discarded: false };
      made.push(m);
      return { network: way.network, held: { ended: () => false }, shape: m.shape, learned: m.shape, key: m.shape, imageId: 'x', slots: { workspace: '', io: '' }, discard: async () => void (m.discarded = true), claimed: async () => undefined } as unknown as WarmStep;
    },
    removeStale: async () => undefined,
  };
  return { steps: steps as unknown as WarmSteps, made, fail: (v: boolean) => void (steps.failing = v) };
}

test('warm step containers: none before a shape is learned; then one beside each waiting gateway, on its network; a new shape replaces those of one no longer kept; the close discards them', async () => {
  const { steps, made } = fakeSteps();
  const rt = engine(() => new ScriptedGateway('10.99.0.2'));
  const p = new GatewayPool(rt, { size: 2, home: '/h', egressNetwork: 'bridge', steps });
  await p.start();
  await eventually('two warm', () => p.warm === 2);
  const first = (await p.take('bridge', undefined))!;
  assert.equal(first.step, undefined, 'no shape known yet');
  p.learn({ image: 'one' } as ContainerSpec);
  await eventually('a step container beside each waiting gateway', () => made.filter((m) => m.shape === 'one').length === 2);
  const second = (await p.take('bridge', undefined))!;
  assert.ok(second.step, 'a gateway waiting when the shape was learned got one');
  assert.equal((second.step as unknown as { network: string }).network, second.way.network, "made on its own gateway's network");
  p.learn({ image: 'two' } as ContainerSpec);
  await eventually('the waiting one made again of the new shape', () => made.some((m) => m.shape === 'two'));
  await eventually('the old shape\'s waiting container discarded', () => made.filter((m) => m.shape === 'one').some((m) => m.discarded));
  await p.close();
  // every container of the second shape was still waiting (none was taken)
  assert.ok(made.filter((m) => m.shape === 'two').every((m) => m.discarded), 'the close discards the ones still waiting');
});

test('a take that leaves some ready: the one behind it is made a while later (not on the cores the step starts on); a take that leaves none: at once', async () => {
  const made: ScriptedGateway[] = [];
  const rt = engine(() => {
    const g = new ScriptedGateway(`10.99.0.${made.length + 2}`);
    made.push(g);
    return g;
  });
  const p = new GatewayPool(rt, { size: 2, home: '/h', egressNetwork: 'bridge', refillDelayMs: 400 });
  await p.start();
  await eventually('two warm', () => p.warm === 2);
  assert.ok(await p.take('bridge', undefined));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(made.length, 2, 'not yet: one is still ready');
  await eventually('made after the delay', () => made.length === 3);
  await eventually('two warm again', () => p.warm === 2);
  assert.ok(await p.take('bridge', undefined));
  assert.ok(await p.take('bridge', undefined));
  await tick();
  assert.ok(made.length >= 4, 'none left: the next is made at once');
  await p.close();
});

test('a step takes the gateway whose step container is of its image; a step of another image one without, so that the container made for the next is kept', async () => {
  const { steps, fail } = fakeSteps();
  const rt = engine(() => new ScriptedGateway('10.99.0.2'));
  const p = new GatewayPool(rt, { size: 2, home: '/h', egressNetwork: 'bridge', steps, refillDelayMs: 50 });
  await p.start();
  await eventually('two warm', () => p.warm === 2);
  p.learn({ image: 'agent' } as ContainerSpec);
  await eventually('both with a container', () => p.warmContainers === 2);
  fail(true);
  // no gateway without one yet: a verify takes one with (its container is not for it: discarded at its claim)
  assert.equal((await p.take('bridge', undefined, 'verify'))?.step?.key, 'agent');
  await eventually('refilled, without a container', () => p.warm === 2);
  assert.equal(p.warmContainers, 1);
  const verify = await p.take('bridge', undefined, 'verify');
  assert.equal(verify?.step, undefined, 'the verify takes the one without');
  const agent = await p.take('bridge', undefined, 'agent');
  assert.equal(agent?.step?.key, 'agent', 'the agent step gets the container made for it');
  await p.close();
});

/** A step's spec of `project`, as the pool learns it (its own directories need not exist). */
function stepOf(project: string): ContainerSpec {
  return {
    name: 'x', image: 'runner/claude-code:latest', cmd: [], env: {}, workingDir: CONTAINER_PATHS.workspace, user: '1000:1000',
    mounts: [
      { source: '/nowhere/wt', target: CONTAINER_PATHS.workspace, readOnly: false },
      { source: '/nowhere/io', target: CONTAINER_PATHS.io, readOnly: false },
      { source: project, target: CONTAINER_PATHS.project, readOnly: true },
    ],
    memoryBytes: 1, cpus: 1, pids: 1, openFiles: 1, fileSizeBytes: 1, readOnlyRoot: false, capAdd: [], network: 'n', labels: {},
  };
}

test('a server of two pipelines keeps a shape of each (up to its size): the refill makes the one fewest have, and each step takes its own', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'warm-shapes-'));
  const made: string[] = [];
  const held = async (spec: ContainerSpec): Promise<HeldContainer> => {
    made.push(spec.mounts.find((m) => m.target === CONTAINER_PATHS.project)!.source);
    let ended = false;
    return { id: String(made.length), ended: () => ended, claim: () => ({}) as never, discard: async () => void (ended = true) };
  };
  const steps = new RealWarmSteps({ createHeld: held, imageConfig: async () => undefined } as never, { dir, keep: 2, labels: {} });
  const rt = engine(() => new ScriptedGateway('10.99.0.2'));
  const p = new GatewayPool(rt, { size: 2, home: '/h', egressNetwork: 'bridge', steps, refillDelayMs: 20 });
  await p.start();
  await eventually('two warm', () => p.warm === 2);
  p.learn(stepOf('/p/a'));
  await eventually('both with a container of a', () => p.warmContainers === 2);
  p.learn(stepOf('/p/b'));
  await tick();
  assert.equal(made.filter((m) => m === '/p/b').length, 0, 'those of a are kept: a is still one of the two shapes');
  // a's next run takes one; the one made behind it is of b, which none has
  const a = await p.take('bridge', undefined, warmKey({ ...stepOf('/p/a'), project: '/p/a' }));
  assert.equal(a?.step?.key, warmKey({ ...stepOf('/p/a'), project: '/p/a' }));
  await eventually('a container of b made', () => made.includes('/p/b') && p.warmContainers === 2);
  const b = await p.take('bridge', undefined, warmKey({ ...stepOf('/p/b'), project: '/p/b' }));
  assert.equal(b?.step?.key, warmKey({ ...stepOf('/p/b'), project: '/p/b' }), "b's step takes the one made for it");
  // a third shape drops the oldest (a): its waiting container is made again of c
  p.learn(stepOf('/p/c'));
  assert.deepEqual(steps.shapes.length, 2);
  await p.close();
  await rm(dir, { recursive: true });
});
