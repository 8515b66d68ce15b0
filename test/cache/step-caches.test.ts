/**
 * A step's caches handed to its user. The hand-over runs as root on the host
 * and walks the cache by path: a step that has the cache mounted at that
 * moment could swap a directory for a symlink under the walk (attack: a
 * directory `d` of files named like /etc's, swapped for `d -> /etc` once the
 * walk has listed it), and the host's /etc/shadow would be chowned to the
 * step's uid. So a cache is never handed over while another run's step uses
 * it: the step then writes a throw-away layer.
 */
import assert from 'node:assert/strict';
import { lstat, mkdir, mkdtemp, rm, writeFile, chown } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { openStepCaches, type OpenCaches } from '../../src/cache/step-caches.js';
import { planCaches } from '../../src/plan/cache-plan.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function setup() {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-step-caches-'));
  roots.push(r);
  const project = path.join(r, 'project');
  await mkdir(project);
  return { home: path.join(r, 'home'), project };
}

function opts(s: { home: string; project: string }, runId: string, uid: number, live: Set<string>): OpenCaches {
  return {
    home: s.home,
    project: s.project,
    caches: planCaches({ npm: { readOnly: false } }),
    runId,
    user: { uid, gid: uid },
    alive: async (id) => live.has(id),
    now: () => new Date(),
  };
}

test('a cache another run uses now is not handed over to a step of another user: that step writes a throw-away layer', async () => {
  assert.equal(process.getuid?.(), 0, 'the hand-over is root\'s: the tests run as root (as CI does)');
  const s = await setup();
  const live = new Set(['run-a']);
  const a = await openStepCaches(opts(s, 'run-a', 1000, live));
  const data = a.mounts[0]!.source;
  assert.equal(a.mounts[0]!.overlay, undefined);
  assert.equal((await lstat(data)).uid, 1000);
  // what run a's step leaves while it runs (as uid 1000)
  await mkdir(path.join(data, 'd'));
  await writeFile(path.join(data, 'd', 'shadow'), 'x');
  await chown(path.join(data, 'd'), 1000, 1000);
  await chown(path.join(data, 'd', 'shadow'), 1000, 1000);

  const b = await openStepCaches(opts(s, 'run-b', 2000, live));
  assert.ok(b.mounts[0]!.overlay, 'run b gets a layer of its own over the cache');
  assert.equal(b.mounts[0]!.source, data);
  assert.match(b.notes.join('\n'), /cannot be given over now \(in use by run run-a\).*thrown away/);
  for (const p of [data, path.join(data, 'd'), path.join(data, 'd', 'shadow')]) assert.equal((await lstat(p)).uid, 1000, `${p} was not walked`);
  await b.close();
  assert.equal((await lstat(data)).uid, 1000);

  // once run a is done, the next step of another user gets the cache itself, handed over
  await a.close();
  live.delete('run-a');
  const c = await openStepCaches(opts(s, 'run-c', 2000, live));
  assert.equal(c.mounts[0]!.overlay, undefined);
  assert.deepEqual(c.notes, []);
  for (const p of [data, path.join(data, 'd'), path.join(data, 'd', 'shadow')]) assert.equal((await lstat(p)).uid, 2000);
  await c.close();
});

test('two first runs of one user at once both get the cache itself: its owner is settled one at a time, before either use is on record', async () => {
  // a CI run saw both runs write throw-away layers (each saw the other's use while handing over) and lose their entries
  const s = await setup();
  const live = new Set(['run-x', 'run-y', 'run-z']);
  const opened = await Promise.all(['run-x', 'run-y', 'run-z'].map((id) => openStepCaches(opts(s, id, 1000, live))));
  for (const o of opened) {
    assert.equal(o.mounts[0]!.overlay, undefined, o.notes.join('\n'));
    assert.deepEqual(o.notes, []);
  }
  assert.equal((await lstat(opened[0]!.mounts[0]!.source)).uid, 1000);
  await Promise.all(opened.map((o) => o.close()));
});
