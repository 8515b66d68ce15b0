/**
 * Two doors on one home: a run that a live process (runner mcp, another
 * server) accepted and has queued or is starting is its own. Another server
 * starting on the same home does not take it up (it would run it a second
 * time, with its own pipeline file of that name), and takes it up once that
 * process is gone. Played with a real second process and the kernel's locks.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { isLocked } from '../../src/common/kernel-lock.js';
import { acceptedElsewhere, RunRequests } from '../../src/runs/run-requests.js';

const MODULE = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/runs/run-requests.js');

/** A second process that accepts run `runId` into `home` (its queued record) and lives until killed. */
function otherDoor(home: string, runId: string): Promise<{ kill: () => Promise<void> }> {
  const code = `
    const { RunRequests } = await import(${JSON.stringify(MODULE)});
    await new RunRequests(${JSON.stringify(path.join(home, 'runs'))}, ${JSON.stringify(home)}).queued(
      { pipeline: 'deploy', why: 'trigger', runId: ${JSON.stringify(runId)}, inputs: { task: 'x' } }, undefined, new Date());
    process.stdout.write('queued\\n');
    setInterval(() => {}, 1000);`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (b: Buffer) => {
      if (b.toString().includes('queued')) resolve({ kill: async () => (child.kill('SIGKILL'), await exited) });
    });
    child.once('exit', (c) => reject(new Error(`the other door exited (${c}) before it queued`)));
  });
}

test('a run another live process queued is not taken up, nor cancelable here; once that process is gone, it is', async () => {
  const home = await mkdtemp(path.join(os.tmpdir(), 'runner-requests-'));
  try {
    const runId = '20250101-000000-abcd';
    const other = await otherDoor(home, runId);
    const requests = new RunRequests(path.join(home, 'runs'), home);
    let killed = false;
    try {
      assert.deepEqual((await requests.leftQueued()).map((r) => r.runId), [], 'a live door\'s queued run is not left over');
      assert.equal(await acceptedElsewhere(home, runId), true);
    } finally {
      await other.kill();
      killed = true;
    }
    assert.ok(killed);
    assert.deepEqual((await requests.leftQueued()).map((r) => r.runId), [runId], 'a dead door\'s queued run is taken up');
    assert.equal(await acceptedElsewhere(home, runId), false);
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});

test('a run this process queued is claimed until it is recorded not_started', async () => {
  const home = await mkdtemp(path.join(os.tmpdir(), 'runner-requests-'));
  try {
    const requests = new RunRequests(path.join(home, 'runs'), home);
    const p = { pipeline: 'deploy', why: 'trigger' as const, runId: '20250101-000000-beef' };
    await requests.queued(p, undefined, new Date());
    assert.equal(await acceptedElsewhere(home, p.runId), false, 'its own run is not another\'s');
    assert.equal(await isLocked('accepted', `${home}\n${p.runId}`), true, 'claimed while queued');
    const rec = await requests.notStarted(p, undefined, { code: 'canceled', message: 'canceled before it started' }, new Date());
    assert.equal(rec.status, 'not_started');
    assert.equal(await isLocked('accepted', `${home}\n${p.runId}`), false, 'released once it will never start');
  } finally {
    await rm(home, { recursive: true, force: true });
  }
});
