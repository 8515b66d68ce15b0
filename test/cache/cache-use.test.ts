/** Who uses a cache: nothing is pruned or removed under a live run; a dead run's mark is taken away. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { cachePaths } from '../../src/cache/cache-dirs.js';
import { beginUse, liveUsers, whileUnused } from '../../src/cache/cache-use.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function paths() {
  const r = await mkdtemp(path.join(os.tmpdir(), 'runner-cache-use-'));
  roots.push(r);
  const p = cachePaths(r, 'npm');
  await mkdir(p.data, { recursive: true });
  return p;
}

test('a cache in use by a live run is left alone; once its use ends, it is free', async () => {
  const p = await paths();
  const live = new Set(['run-a']);
  const alive = async (id: string) => live.has(id);
  const use = await beginUse(p, 'run-a');
  const busy = await whileUnused(p, alive, async () => 'pruned');
  assert.deepEqual(busy, { ran: false, why: 'in use by run run-a' });
  await use.end();
  assert.deepEqual(await whileUnused(p, alive, async () => 'pruned'), { ran: true, value: 'pruned' });
});

test('the mark of a run whose process is gone is taken away, with its layer', async () => {
  const p = await paths();
  const use = await beginUse(p, 'run-dead');
  await mkdir(path.join(p.scratch, use.id, 'upper'), { recursive: true });
  await writeFile(path.join(p.scratch, use.id, 'upper', 'x'), 'x');
  assert.deepEqual(await liveUsers(p, async () => false), []);
  assert.deepEqual(await readdir(p.users), []);
  assert.ok(!existsSync(path.join(p.scratch, use.id)));
});

test('a step that begins while a prune runs waits for it to end', async () => {
  const p = await paths();
  let release!: () => void;
  const pruning = whileUnused(p, async () => false, () => new Promise<string>((r) => (release = () => r('done'))));
  await new Promise((r) => setTimeout(r, 50));
  let started = false;
  const use = beginUse(p, 'run-b').then((u) => ((started = true), u));
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(started, false, 'the step waits for the prune');
  // and a second prune at once is refused, not queued
  assert.deepEqual(await whileUnused(p, async () => false, async () => 'x'), { ran: false, why: 'another prune or removal of it is under way' });
  release();
  assert.deepEqual(await pruning, { ran: true, value: 'done' });
  await (await use).end();
  assert.equal(started, true);
});
