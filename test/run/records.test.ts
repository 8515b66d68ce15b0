/** Listing run records: newest first, unreadable ones skipped, a limit reads only what it needs. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import type { RunRecord } from '../../src/run/record.js';
import { listRuns } from '../../src/run/records.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function runsDir(n: number): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'runner-records-'));
  roots.push(root);
  for (let i = 0; i < n; i++) {
    const runId = `20261122-10${String(Math.floor(i / 60)).padStart(2, '0')}${String(i % 60).padStart(2, '0')}-aaaaaa`;
    await mkdir(path.join(root, runId));
    const rec = { runId, pipeline: i % 2 ? 'odd' : 'even', status: 'succeeded', startedAt: new Date(Date.UTC(2026, 10, 22, 10, 0, i)).toISOString() };
    await writeFile(path.join(root, runId, 'run.json'), JSON.stringify(rec));
  }
  await mkdir(path.join(root, '20261122-235959-broken'));
  await writeFile(path.join(root, '20261122-235959-broken', 'run.json'), '{ not json');
  return root;
}

test('all records, newest first, the unreadable one skipped', async () => {
  const ids = (await listRuns(await runsDir(40))).map((r) => r.runId);
  assert.equal(ids.length, 40);
  assert.equal(ids[0], '20261122-100039-aaaaaa');
  assert.equal(ids[39], '20261122-100000-aaaaaa');
});

test('a limit and a filter: the newest that match, however many records must be read to find them', async () => {
  const root = await runsDir(80);
  const odd = await listRuns(root, { limit: 3, where: (r: RunRecord) => r.pipeline === 'odd' });
  assert.deepEqual(odd.map((r) => r.runId), ['20261122-100119-aaaaaa', '20261122-100117-aaaaaa', '20261122-100115-aaaaaa']);
  const none = await listRuns(root, { limit: 5, where: (r: RunRecord) => r.pipeline === 'nope' });
  assert.deepEqual(none, []);
  assert.equal((await listRuns(root, { limit: 100 })).length, 80);
});

test('a run queued early and started late keeps its place, with a limit and without', async () => {
  const root = await runsDir(40);
  const late = '20261122-095900-queued';
  await mkdir(path.join(root, late));
  await writeFile(path.join(root, late, 'run.json'), JSON.stringify({ runId: late, pipeline: 'even', status: 'running', startedAt: '2026-11-22T11:00:00.000Z' }));
  const all = (await listRuns(root)).map((r) => r.runId);
  assert.equal(all.at(-1), late, 'ordered by when it was asked for');
  assert.deepEqual((await listRuns(root, { limit: 41 })).map((r) => r.runId), all, 'a limit reads and orders the same way');
  assert.deepEqual((await listRuns(root, { limit: 5 })).map((r) => r.runId), all.slice(0, 5));
});
