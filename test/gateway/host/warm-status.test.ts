/** What `runner runs` says of warm gateways: each live pool's file read, a dead runner's not counted and pruned. */
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { describeWarm, readWarmStatuses, removeWarmStatus, writeWarmStatus, type WarmStatus } from '../../../src/gateway/host/warm-status.js';

const host = os.hostname();
const status = (o: Partial<WarmStatus>): WarmStatus => ({ host, pid: process.pid, command: 'serve', warm: 2, size: 2, idle: false, ...o });

test('describeWarm: nothing without a pool; the sum and who keeps them; an idle pool and another host said', () => {
  assert.equal(describeWarm([]), undefined);
  assert.equal(describeWarm([status({})], host), `2 of 2 step gateways warm, each made ahead for one step alone (runner serve --warm 2, pid ${process.pid}: 2 ready)`);
  const two = describeWarm([status({ warm: 1 }), status({ host: 'other', pid: 7, command: 'exec', warm: 0, size: 1, idle: true })], host)!;
  assert.match(two, /^1 of 3 step gateways warm/);
  assert.match(two, /runner exec --warm 1, pid 7 on other: given back while idle, made again at the next step/);
  // a pool that keeps step containers too (the local engine) says how many are made
  assert.equal(describeWarm([status({ containers: 1 })], host), `2 of 2 step gateways warm, each made ahead for one step alone (runner serve --warm 2, pid ${process.pid}: 2 ready, 1 with the step's container made too)`);
});

test('a status file with its count of step containers reads back with it; one without, without', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'warm-status-'));
  await writeWarmStatus(dir, status({ containers: 2 }));
  assert.equal((await readWarmStatuses(dir))[0]!.containers, 2);
  await writeWarmStatus(dir, status({}));
  assert.equal((await readWarmStatuses(dir))[0]!.containers, undefined);
  await rm(dir, { recursive: true });
});

test('readWarmStatuses: live pools read; a dead runner of this host not counted, its file pruned when asked; junk ignored', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'warm-status-'));
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  const deadPid = Number(dead.stdout);
  await writeWarmStatus(dir, status({}));
  await writeWarmStatus(dir, status({ pid: deadPid }));
  await writeWarmStatus(dir, status({ host: 'elsewhere', pid: deadPid, command: 'exec' }));
  await writeFile(path.join(dir, 'junk.json'), '{"host": 1}');
  await writeFile(path.join(dir, 'half.json'), '{"host":');
  assert.deepEqual((await readWarmStatuses(dir)).map((s) => `${s.host === host ? 'here' : s.host}:${s.pid === process.pid ? 'me' : 'dead'}`).sort(), ['elsewhere:dead', 'here:me']);
  assert.equal((await readdir(dir)).length, 5, 'read alone, nothing is removed');
  await readWarmStatuses(dir, true);
  assert.equal((await readdir(dir)).length, 4, "the dead runner's file of this host pruned (another host's cannot be told)");
  await removeWarmStatus(dir, host, process.pid);
  assert.equal((await readWarmStatuses(dir)).length, 1);
  assert.deepEqual(await readWarmStatuses(path.join(dir, 'none')), [], 'no directory: no pool');
  await rm(dir, { recursive: true, force: true });
});

// A runner killed with -9 leaves its file; its pid is then another process's (pids wrap, and a runner in a container
// started again is pid 1 again). That file is not counted, and is pruned: the process with that pid is not the one
// that wrote it (it started at another time).
test("readWarmStatuses: a dead runner's file whose pid another process now has is not counted, and is pruned", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'warm-status-'));
  const other = spawn('sleep', ['30'], { stdio: 'ignore' });
  try {
    // what the dead runner wrote: the other process's pid, and the start of the process that wrote it (not that one)
    await writeFile(path.join(dir, `${host}-${other.pid}.json`), `${JSON.stringify({ ...status({ pid: other.pid! }), started: '1' })}\n`);
    assert.deepEqual(await readWarmStatuses(dir), [], 'the pid is alive, but not the runner that wrote the file');
    await readWarmStatuses(dir, true);
    assert.deepEqual(await readdir(dir), [], 'pruned');
    // the pool's own file, as it writes it, is counted
    await writeWarmStatus(dir, status({}));
    assert.equal((await readWarmStatuses(dir, true)).length, 1);
  } finally {
    other.kill();
    await rm(dir, { recursive: true, force: true });
  }
});
