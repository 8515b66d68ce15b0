import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { TREE_BIN_DIR, TREE_TOOL_DIR, TREES_DIR } from '../../../src/cache/npm-tree/files.js';
import { cacheEnv, planCaches } from '../../../src/plan/cache-plan.js';
import { StepRefused, type AddonStep } from '../../../src/run/step-addons/addon.js';
import { cachesAddon, cachesNotUsed } from '../../../src/run/step-addons/caches.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

/** The part of a step the caches add-on reads: its plan's caches, the run, the project, the step's user. */
function stepWith(caches: ReturnType<typeof planCaches>, home: string, project: string, o: { imagePath?: string; ownPath?: string } = {}): AddonStep {
  const uid = process.getuid?.() ?? 0;
  const runtime = o.imagePath !== undefined ? { imageConfig: async () => ({ id: 'sha256:feed', user: '', workingDir: '', env: { PATH: o.imagePath }, cmd: undefined, entrypoint: undefined }) } : {};
  return {
    c: {
      plan: { caches, image: 'runner/toolchain:latest', env: o.ownPath !== undefined ? { PATH: o.ownPath } : {} },
      home,
      ws: { project, path: project },
      unit: { name: 'verify' },
      identity: { runId: '20260101-000000-abcd' },
      deps: { signal: new AbortController().signal, clock: () => new Date(), runtime },
    },
    user: { uid, gid: uid },
    ioDir: path.join(home, 'io'),
  } as unknown as AddonStep;
}

test('the line a step gets for caches it cannot mount where it runs', () => {
  assert.equal(
    cachesNotUsed(planCaches({ npm: { readOnly: false }, pip: { readOnly: true } }), "on --engine swarm (a step on another node cannot mount the runner's disk)"),
    "cache npm, pip: not used on --engine swarm (a step on another node cannot mount the runner's disk); the step runs without",
  );
});

test("an engine that cannot mount the runner's disk: no cache is opened, nor its settings given; the log says so", async () => {
  const caches = planCaches({ npm: { readOnly: false } });
  // a home that does not exist: nothing is made there
  const open = await cachesAddon({ noHostMounts: 'on --engine swarm (why)' }).open(stepWith(caches, '/nonexistent/home', '/nonexistent/project'));
  assert.deepEqual(open.notes, ['cache npm: not used on --engine swarm (why); the step runs without']);
  assert.equal(open.mounts, undefined);
  assert.equal(open.env, undefined);
  assert.equal(await open.close({ reason: 'exit' }), undefined);
});

test('a step without caches gets nothing', async () => {
  const open = await cachesAddon({}).open(stepWith([], '/nonexistent/home', '/nonexistent/project'));
  assert.deepEqual(open, { close: open.close });
});

test("caches that cannot be made ready refuse the step with cache_failed, saying why", async () => {
  const caches = planCaches({ npm: { readOnly: false } });
  await assert.rejects(cachesAddon({}).open(stepWith(caches, '/nonexistent/home', '/nonexistent/project')), (err: unknown) => {
    assert.ok(err instanceof StepRefused);
    assert.equal(err.code, 'cache_failed');
    assert.match(err.message, /^not started: its caches could not be made ready: /);
    return true;
  });
});

test("caches opened: mounted, their settings over the step's env, and their use ended at the close", async () => {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-caches-addon-'));
  roots.push(r);
  await mkdir(path.join(r, 'project'));
  const caches = planCaches({ npm: { readOnly: false } });
  const open = await cachesAddon({}).open(stepWith(caches, path.join(r, 'home'), path.join(r, 'project'), { imagePath: '/opt/node/bin:/usr/bin' }));
  // npm's cache brings its installed trees (read-only) and the runner's npm (first on the image's PATH)
  assert.deepEqual(open.mounts!.map((m) => [m.target, m.readOnly]), [[caches[0]!.target, false], [TREE_TOOL_DIR, true], [TREES_DIR, true]]);
  assert.deepEqual(open.env, {
    ...cacheEnv(caches),
    PATH: `${TREE_BIN_DIR}:/opt/node/bin:/usr/bin`,
    RUNNER_NPM_TREE_BIN: TREE_BIN_DIR,
    RUNNER_NPM_TREES: TREES_DIR,
    RUNNER_NPM_TREE_IMAGE: 'sha256:feed',
    RUNNER_NPM_TREE_MARK: '/home/agent/.runner/npm-tree.json',
  });
  assert.equal(open.envDefaults, undefined);
  // no install ran (no mark): nothing kept, nothing said
  assert.deepEqual(await open.close({ reason: 'exit' }), { logLines: [] });
});

test("the installed trees: a step that may not write npm's cache leaves no mark; the step's own PATH is kept behind the runner's npm; pip alone brings none", async () => {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-caches-addon-'));
  roots.push(r);
  await mkdir(path.join(r, 'project'));
  const ro = await cachesAddon({}).open(stepWith(planCaches({ npm: { readOnly: true } }), path.join(r, 'home'), path.join(r, 'project'), { ownPath: '/mine/bin' }));
  assert.equal(ro.env!.RUNNER_NPM_TREE_MARK, undefined);
  assert.equal(ro.env!.PATH, `${TREE_BIN_DIR}:/mine/bin`);
  assert.equal(ro.env!.RUNNER_NPM_TREE_IMAGE, 'runner/toolchain:latest', 'an engine that does not say the image ID: its name');
  await ro.close({ reason: 'exit' });
  const pip = await cachesAddon({}).open(stepWith(planCaches({ pip: { readOnly: false } }), path.join(r, 'home'), path.join(r, 'project')));
  assert.equal(pip.env!.PATH, undefined);
  assert.equal(pip.mounts!.length, 1);
  await pip.close({ reason: 'exit' });
});
