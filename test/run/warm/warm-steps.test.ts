/**
 * Warm step containers' logic without an engine (src/run/warm/warm-steps.ts): what makes two specs one shape,
 * what a warm container is made with (none of the step's command, variables, secrets or run labels; empty
 * directories of its own for the workspace and io), and when a step claims it or makes its own. The real
 * engine's part: test/integration/warm-gateways.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import type { ContainerHandle, ContainerSpec, HeldContainer } from '../../../src/container/runtime.js';
import { CONTAINER_PATHS } from '../../../src/plan/render.js';
import { claimWarm, shapeDifference, warmShape, WarmSteps, type WarmStep } from '../../../src/run/warm/warm-steps.js';
import { takePlace } from '../../../src/workspace/take-place.js';

function spec(o: Partial<ContainerSpec> & { worktree?: string; io?: string } = {}): ContainerSpec {
  const { worktree = '/home/r/worktrees/run-1', io = '/home/r/runs/run-1/io/one', ...rest } = o;
  return {
    name: 'runner-run-1-one.1',
    image: 'runner/claude-code:latest',
    cmd: ['claude', '-p', 'fix the bug'],
    env: { RUNNER_RUN_ID: 'run-1' },
    secretEnv: { TOKEN: 'secret-value' },
    workingDir: CONTAINER_PATHS.workspace,
    user: '1000:1000',
    mounts: [
      { source: worktree, target: CONTAINER_PATHS.workspace, readOnly: false },
      { source: io, target: CONTAINER_PATHS.io, readOnly: false },
      { source: '/home/u/project', target: CONTAINER_PATHS.project, readOnly: true },
    ],
    memoryBytes: 2 ** 31,
    cpus: 1.5,
    pids: 512,
    openFiles: 4096,
    fileSizeBytes: 2 ** 30,
    readOnlyRoot: false,
    capAdd: [],
    network: 'runner-warm-a-net',
    dns: ['10.9.0.2'],
    hosts: { 'runner-gateway': '10.9.0.2' },
    labels: { 'dev.runner.run-id': 'run-1' },
    isolation: 'runc',
    ...rest,
  };
}

test('one shape: another run, step, command, variables, secrets, labels and workspace directories', () => {
  const a = spec();
  const b = spec({ name: 'runner-run-2-two.1', cmd: ['other'], env: { X: '1' }, secretEnv: {}, labels: { 'dev.runner.run-id': 'run-2' }, worktree: '/elsewhere/wt', io: '/elsewhere/io' });
  assert.ok(warmShape(a));
  assert.equal(warmShape(a), warmShape(b));
});

test('another shape: image, user, limits, a mount, the network, read-only root, isolation', () => {
  const a = warmShape(spec());
  const changed: Array<Partial<ContainerSpec>> = [
    { image: 'runner/codex:latest' },
    { user: '0:0' },
    { memoryBytes: 2 ** 30 },
    { cpus: 2 },
    { pids: 100 },
    { readOnlyRoot: true },
    { capAdd: ['NET_ADMIN'] },
    { network: 'runner-warm-b-net' },
    { dns: ['10.9.0.3'] },
    { isolation: 'gvisor' },
    { mounts: [...spec().mounts, { source: '/home/u/.cache/npm', target: '/cache/npm', readOnly: false }] },
    { mounts: spec().mounts.map((m) => (m.target === CONTAINER_PATHS.project ? { ...m, source: '/home/u/other' } : m)) },
  ];
  for (const c of changed) assert.notEqual(warmShape(spec(c)), a, JSON.stringify(c));
});

test('no shape for a spec no warm container serves: input, scratch (another node), placement, no workspace or io of its own, or read-only ones', () => {
  assert.equal(warmShape(spec({ stdin: 'x' })), undefined);
  assert.equal(warmShape(spec({ scratch: ['/w'] })), undefined);
  assert.equal(warmShape(spec({ placement: ['node.labels.gpu == true'] })), undefined);
  assert.equal(warmShape(spec({ mounts: spec().mounts.filter((m) => m.target !== CONTAINER_PATHS.io) })), undefined);
  assert.equal(warmShape(spec({ mounts: spec().mounts.map((m) => (m.target === CONTAINER_PATHS.workspace ? { ...m, readOnly: true } : m)) })), undefined);
});

/** A runtime that records what it was asked to hold, and holds a fake. */
function heldRuntime(imageId = 'sha256:one') {
  const made: ContainerSpec[] = [];
  const held: Array<HeldContainer & { discarded: boolean; claimedWith?: ContainerSpec }> = [];
  const runtime = {
    imageId,
    createHeld: async (s: ContainerSpec) => {
      made.push(s);
      const h: HeldContainer & { discarded: boolean; claimedWith?: ContainerSpec } = {
        id: `held-${held.length}`,
        discarded: false,
        ended: () => h.discarded,
        claim: (step) => {
          h.claimedWith = step;
          return {} as ContainerHandle;
        },
        discard: async () => {
          h.discarded = true;
        },
      };
      held.push(h);
      return h;
    },
    imageConfig: async () => ({ id: runtime.imageId, user: '', workingDir: '', env: {}, cmd: undefined, entrypoint: undefined }),
  };
  return { runtime, made, held };
}

const slotOf = (w: WarmStep, target: string, part: 'dir' | 'upper' | 'work' = 'dir') => w.slots.find((d) => d.target === target && d.part === part)!.path;

const way = { network: 'runner-warm-a-net', dns: ['10.9.0.2'], hosts: { 'runner-gateway': '10.9.0.2' } };

async function home() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'warm-steps-'));
  const worktree = path.join(root, 'worktrees', 'run-1');
  const io = path.join(root, 'runs', 'run-1', 'io', 'one');
  await mkdir(worktree, { recursive: true });
  await mkdir(io, { recursive: true });
  await writeFile(path.join(worktree, 'a.txt'), 'the run\'s work');
  return { root, worktree, io, dir: path.join(root, 'warm-steps') };
}

test('nothing is made before a shape is learned; then one of it, with none of the step\'s command, variables, secrets or labels, and empty directories of its own', async () => {
  const h = await home();
  const { runtime, made } = heldRuntime();
  const steps = new WarmSteps(runtime as never, { dir: h.dir, labels: { 'dev.runner.warm-owner': 'me' } });
  assert.equal(await steps.make(way, 'w-step'), undefined);
  assert.equal(steps.learn(spec({ worktree: h.worktree, io: h.io })), true);
  assert.equal(steps.learn(spec({ worktree: h.worktree, io: h.io, cmd: ['again'] })), false, 'the same shape again is no news');
  const w = await steps.make(way, 'w-step');
  assert.ok(w);
  const m = made[0]!;
  assert.deepEqual(m.cmd, []);
  assert.deepEqual(m.env, {});
  assert.equal(m.secretEnv, undefined);
  assert.deepEqual(m.labels, { 'dev.runner.warm-owner': 'me', 'dev.runner.role': 'step' });
  assert.equal(m.name, 'w-step');
  assert.equal(m.network, way.network);
  const ws = m.mounts.find((x) => x.target === CONTAINER_PATHS.workspace)!.source;
  const io = m.mounts.find((x) => x.target === CONTAINER_PATHS.io)!.source;
  assert.deepEqual([ws, io], [slotOf(w, CONTAINER_PATHS.workspace), slotOf(w, CONTAINER_PATHS.io)]);
  assert.ok(ws.startsWith(`${h.dir}/`) && io.startsWith(`${h.dir}/`));
  assert.deepEqual(await readdir(ws), []);
  assert.deepEqual(await readdir(io), []);
  assert.equal(w.shape, warmShape(spec({ ...way })));
  await rm(h.root, { recursive: true });
});

test('a step of its shape claims it: the worktree and io directory move into its directories, and the spec names it', async () => {
  const h = await home();
  const { runtime, held } = heldRuntime();
  const steps = new WarmSteps(runtime as never, { dir: h.dir, labels: {} });
  steps.learn(spec({ worktree: h.worktree, io: h.io }));
  const w = (await steps.make(way, 'w-step'))!;
  const wsIno = (await import('node:fs')).statSync(slotOf(w, CONTAINER_PATHS.workspace)).ino;
  const step = spec({ worktree: h.worktree, io: h.io, ...way });
  const r = await claimWarm(w, step, { ws: { takePlace: (slot) => takePlace(h.worktree, slot).then(() => undefined) }, runtime });
  assert.equal(r.why, undefined);
  assert.equal(r.spec.warm, held[0]);
  assert.equal((await import('node:fs')).statSync(h.worktree).ino, wsIno, 'the worktree is the directory the warm container mounted');
  assert.equal(await readFile(path.join(h.worktree, 'a.txt'), 'utf8'), 'the run\'s work');
  assert.deepEqual(await readdir(h.dir), [], 'its own directory is gone');
  assert.equal(held[0]!.discarded, false);
  await rm(h.root, { recursive: true });
});

test('a step of another shape, after the image changed, or whose workspace cannot give its place, makes its own: the warm one is discarded and nothing moved', async () => {
  const cases: Array<{ why: RegExp; step?: Partial<ContainerSpec>; imageId?: string; noPlace?: true }> = [
    { why: /another user/, step: { user: '0:0' } },
    { why: /image .* changed/, imageId: 'sha256:two' },
    { why: /not a worktree of the run alone/, noPlace: true },
  ];
  for (const c of cases) {
    const h = await home();
    const { runtime, held } = heldRuntime();
    const steps = new WarmSteps(runtime as never, { dir: h.dir, labels: {} });
    steps.learn(spec({ worktree: h.worktree, io: h.io }));
    const w = (await steps.make(way, 'w-step'))!;
    if (c.imageId) runtime.imageId = c.imageId;
    const before = (await import('node:fs')).statSync(h.worktree).ino;
    const r = await claimWarm(w, spec({ worktree: h.worktree, io: h.io, ...way, ...(c.step ?? {}) }), {
      ws: { takePlace: c.noPlace ? undefined : (slot) => takePlace(h.worktree, slot).then(() => undefined) },
      runtime,
    });
    assert.match(r.why ?? '', c.why);
    assert.equal(r.spec.warm, undefined);
    assert.equal(held[0]!.discarded, true);
    assert.equal((await import('node:fs')).statSync(h.worktree).ino, before, 'the worktree did not move');
    assert.deepEqual(await readdir(h.dir), [], 'its directories went with it');
    await rm(h.root, { recursive: true });
  }
});

test('one that ended while it waited is not claimed', async () => {
  const h = await home();
  const { runtime, held } = heldRuntime();
  const steps = new WarmSteps(runtime as never, { dir: h.dir, labels: {} });
  steps.learn(spec({ worktree: h.worktree, io: h.io }));
  const w = (await steps.make(way, 'w-step'))!;
  held[0]!.discarded = true;
  const r = await claimWarm(w, spec({ worktree: h.worktree, io: h.io, ...way }), { ws: { takePlace: (slot) => takePlace(h.worktree, slot).then(() => undefined) }, runtime });
  assert.match(r.why ?? '', /ended while it waited/);
  await rm(h.root, { recursive: true });
});

test('a warm container that cannot be made is said once per shape, and its directories go', async () => {
  const h = await home();
  const said: string[] = [];
  const runtime = { createHeld: async () => Promise.reject(new Error('image has no /bin/sh')), imageConfig: async () => undefined };
  const steps = new WarmSteps(runtime as never, { dir: h.dir, labels: {}, onProblem: (m) => said.push(m) });
  steps.learn(spec({ worktree: h.worktree, io: h.io }));
  assert.equal(await steps.make(way, 'a'), undefined);
  assert.equal(await steps.make(way, 'b'), undefined);
  assert.equal(said.length, 1);
  assert.match(said[0]!, /could not be made .*cold.*no \/bin\/sh/);
  assert.deepEqual(await readdir(h.dir), []);
  await rm(h.root, { recursive: true });
});

test('a cache read through a layer: its lower is the shape, its upper and work the step\'s own; the warm container gets its own, and the step\'s take their place at the claim', async () => {
  const h = await home();
  const layer = path.join(h.root, 'caches', 'npm', 'scratch', 'use-1');
  await mkdir(path.join(layer, 'upper'), { recursive: true });
  await mkdir(path.join(layer, 'work'));
  const cache = { source: path.join(h.root, 'caches', 'npm', 'data'), target: '/home/agent/.npm', readOnly: false };
  const withCache = (o: { upper: string; work: string }) => [...spec({ worktree: h.worktree, io: h.io }).mounts, { ...cache, overlay: o }];
  const a = spec({ worktree: h.worktree, io: h.io, mounts: withCache({ upper: path.join(layer, 'upper'), work: path.join(layer, 'work') }) });
  const b = spec({ mounts: withCache({ upper: '/other/upper', work: '/other/work' }) });
  assert.equal(warmShape(a), warmShape(b), 'another use of the cache: one shape');
  assert.notEqual(warmShape(a), warmShape(spec({ mounts: [...spec().mounts, { ...cache, source: '/another/cache', overlay: { upper: '/u', work: '/w' } }] })), 'another cache: another shape');
  const { runtime, made, held } = heldRuntime();
  const steps = new WarmSteps(runtime as never, { dir: h.dir, labels: {} });
  steps.learn(a);
  const w = (await steps.make(way, 'w-step'))!;
  const overlay = made[0]!.mounts.find((m) => m.overlay)!.overlay!;
  assert.deepEqual(overlay, { upper: slotOf(w, cache.target, 'upper'), work: slotOf(w, cache.target, 'work') });
  assert.equal(made[0]!.mounts.find((m) => m.overlay)!.source, cache.source, 'the cache itself, as the step has it');
  // the kernel makes its own directory in an overlay's work when the container starts
  await mkdir(path.join(overlay.work, 'work'));
  const upperIno = (await import('node:fs')).statSync(overlay.upper).ino;
  const r = await claimWarm(w, { ...a, ...way }, { ws: { takePlace: (slot) => takePlace(h.worktree, slot).then(() => undefined) }, runtime });
  assert.equal(r.why, undefined);
  assert.equal(r.spec.warm, held[0]);
  assert.equal((await import('node:fs')).statSync(path.join(layer, 'upper')).ino, upperIno, "the step's upper is the warm container's");
  assert.deepEqual(await readdir(path.join(layer, 'work')), ['work']);
  assert.deepEqual(await readdir(h.dir), []);
  await rm(h.root, { recursive: true });
});

test('shapes kept: the latest first, `keep` of them; one seen again moves first and is no news', async () => {
  const h = await home();
  const { runtime, made } = heldRuntime();
  const steps = new WarmSteps(runtime as never, { dir: h.dir, keep: 2, labels: {} });
  const of = (project: string) => spec({ mounts: spec().mounts.map((m) => (m.target === CONTAINER_PATHS.project ? { ...m, source: project } : m)) });
  assert.equal(steps.learn(of('/a')), true);
  assert.equal(steps.learn(of('/b')), true);
  assert.deepEqual(steps.shapes, [warmShape(of('/b')), warmShape(of('/a'))]);
  assert.equal(steps.learn(of('/a')), false, 'a again: kept already');
  assert.deepEqual(steps.shapes, [warmShape(of('/a')), warmShape(of('/b'))]);
  assert.equal(steps.learn(of('/c')), true);
  assert.deepEqual(steps.shapes, [warmShape(of('/c')), warmShape(of('/a'))], 'b, the oldest, dropped');
  await steps.make(way, 'x', warmShape(of('/a')));
  assert.equal(made[0]!.mounts.find((m) => m.target === CONTAINER_PATHS.project)!.source, '/a', 'made of the shape asked for');
  await steps.make(way, 'y', warmShape(of('/b')));
  assert.equal(made[1]!.mounts.find((m) => m.target === CONTAINER_PATHS.project)!.source, '/c', 'a shape no longer kept: the latest');
  await rm(h.root, { recursive: true });
});

test('shapeDifference names what differs first, and which mounts', () => {
  assert.equal(shapeDifference(warmShape(spec())!, warmShape(spec({ image: 'x' }))!), 'image');
  assert.equal(shapeDifference(warmShape(spec())!, warmShape(spec({ memoryBytes: 1 }))!), 'memory');
  assert.equal(shapeDifference(warmShape(spec())!, warmShape(spec({ mounts: spec().mounts.map((m) => (m.target === CONTAINER_PATHS.project ? { ...m, source: '/p2' } : m)) }))!), `mounts (${CONTAINER_PATHS.project})`);
});
