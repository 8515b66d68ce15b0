import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { test } from 'node:test';
import type { NotStarted } from '../../src/runs/show.js';
import { waitForRun, type WaitExtra } from '../../src/mcp/wait.js';

const running = { runId: 'r1', status: 'running' } as unknown as NotStarted;

function extraWith(signal: AbortSignal): WaitExtra {
  return { signal, sendNotification: async () => undefined };
}

test('a long wait leaves no abort listener behind on the call signal, one per poll piled up before', async () => {
  const call = new AbortController();
  let reads = 0;
  let most = 0;
  const r = await waitForRun(
    async () => {
      reads++;
      most = Math.max(most, getEventListeners(call.signal, 'abort').length);
      return running;
    },
    () => false,
    // long enough for ten polls on a starved machine (at 200 ms a loaded run polled fewer, and failed on its count)
    2000,
    extraWith(call.signal),
    5,
  );
  assert.equal(r.status, 'running');
  assert.ok(reads >= 10, `polled ${reads} times`);
  assert.ok(most <= 1, `${most} abort listeners at once`);
  assert.equal(getEventListeners(call.signal, 'abort').length, 0);
});

test('a client that cancels the call ends the wait at once', async () => {
  const call = new AbortController();
  const t0 = Date.now();
  setTimeout(() => call.abort(), 50);
  const r = await waitForRun(async () => running, () => false, 10_000, extraWith(call.signal), 1000);
  assert.equal(r.status, 'running');
  assert.ok(Date.now() - t0 < 2000, `waited ${Date.now() - t0} ms after the cancel`);
});

test('a run that has ended is answered at the first read, with no wait', async () => {
  const call = new AbortController();
  const t0 = Date.now();
  const ended = { runId: 'r1', status: 'succeeded' } as unknown as NotStarted;
  const r = await waitForRun(async () => ended, (x) => x.status === 'succeeded', 10_000, extraWith(call.signal));
  assert.equal(r.status, 'succeeded');
  assert.ok(Date.now() - t0 < 500);
});
