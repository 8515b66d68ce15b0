/**
 * Kernel locks (src/common/kernel-lock.ts): held while the process lives; a waiter is woken when the holder lets go
 * or dies, not at its next poll (each test waits with a poll of a minute, so only the wake-up can end it in time);
 * a holder of an earlier version (which says nothing) is polled, never spun on.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { test } from 'node:test';
import { isLocked, socketName, tryLock, waitLock } from '../../src/common/kernel-lock.js';

const MINUTE = 60_000;
const key = () => `test-${process.pid}-${Math.random()}`;

test('one holder at a time; released, the lock is free', async () => {
  const k = key();
  const a = await tryLock('t', k);
  assert.ok(a);
  assert.equal(await tryLock('t', k), undefined);
  assert.equal(await isLocked('t', k), true);
  await a.release();
  assert.equal(await isLocked('t', k), false);
});

test('a waiter is woken when the holder lets go, not at its next poll', async () => {
  const k = key();
  const a = (await tryLock('t', k))!;
  let told = 0;
  const t0 = Date.now();
  const waiting = waitLock('t', k, { pollMs: MINUTE, onWait: () => told++ });
  setTimeout(() => void a.release(), 100);
  const b = await waiting;
  assert.ok(Date.now() - t0 < 20_000, `woken after ${Date.now() - t0} ms`);
  assert.equal(told, 1);
  await b.release();
});

test('several waiters: each gets the lock in turn, each woken by the release before it', async () => {
  const k = key();
  const first = (await tryLock('t', k))!;
  const order: number[] = [];
  const t0 = Date.now();
  const waiters = [1, 2, 3, 4].map(async (n) => {
    const held = await waitLock('t', k, { pollMs: MINUTE });
    order.push(n);
    await new Promise((r) => setTimeout(r, 20));
    await held.release();
  });
  setTimeout(() => void first.release(), 50);
  await Promise.all(waiters);
  assert.equal(order.length, 4);
  assert.ok(Date.now() - t0 < 20_000, `four hand-overs took ${Date.now() - t0} ms`);
});

test('a holder killed with -9: its waiter is woken at once', async () => {
  const k = key();
  const mod = new URL('../../src/common/kernel-lock.js', import.meta.url).href;
  const child = spawn(process.execPath, ['--input-type=module', '-e', `const { tryLock } = await import(${JSON.stringify(mod)}); const h = await tryLock('t', ${JSON.stringify(k)}); console.log(h ? 'held' : 'not'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const said = await new Promise<string>((r) => child.stdout.once('data', (b: Buffer) => r(b.toString().trim())));
  assert.equal(said, 'held');
  const t0 = Date.now();
  const waiting = waitLock('t', k, { pollMs: MINUTE });
  setTimeout(() => child.kill('SIGKILL'), 100);
  const held = await waiting;
  assert.ok(Date.now() - t0 < 20_000, `woken after ${Date.now() - t0} ms`);
  await held.release();
});

test('a holder killed before it took the waiter\'s connection (busy, the connection in its backlog): the waiter is woken at once', async () => {
  const k = key();
  const mod = new URL('../../src/common/kernel-lock.js', import.meta.url).href;
  // it holds the lock, says so, then keeps its event loop busy: the waiter's connection is never accepted
  const child = spawn(process.execPath, ['--input-type=module', '-e', `const { tryLock } = await import(${JSON.stringify(mod)}); const h = await tryLock('t', ${JSON.stringify(k)}); process.stdout.write(h ? 'held' : 'not', () => { const end = Date.now() + 30000; while (Date.now() < end); });`], { stdio: ['ignore', 'pipe', 'inherit'] });
  const said = await new Promise<string>((r) => child.stdout.once('data', (b: Buffer) => r(b.toString().trim())));
  assert.equal(said, 'held');
  const t0 = Date.now();
  const waiting = waitLock('t', k, { pollMs: MINUTE });
  setTimeout(() => child.kill('SIGKILL'), 300);
  const held = await waiting;
  assert.ok(Date.now() - t0 < 20_000, `woken after ${Date.now() - t0} ms`);
  await held.release();
});

test('a holder that says nothing (an earlier runner) is polled, not spun on; its release is found at the next poll', async () => {
  const k = key();
  let connections = 0;
  const old = net.createServer((c) => {
    connections++;
    c.destroy();
  });
  await new Promise<void>((r) => old.listen(socketName('t', k), r));
  const waiting = waitLock('t', k, { pollMs: 100 });
  await new Promise((r) => setTimeout(r, 1000));
  // each poll: its connection, and a probe of whether the name is still held (two a poll, about twenty a second)
  assert.ok(connections >= 2 && connections <= 40, `${connections} connections in a second at a poll of 100 ms`);
  await new Promise<void>((r) => old.close(() => r()));
  const held = await waiting;
  await held.release();
});

test('a signal stops the wait at once', async () => {
  const k = key();
  const a = (await tryLock('t', k))!;
  const ac = new AbortController();
  const t0 = Date.now();
  const waiting = waitLock('t', k, { pollMs: MINUTE, signal: ac.signal, abort: () => new Error('given up') });
  setTimeout(() => ac.abort(), 100);
  await assert.rejects(waiting, /given up/);
  assert.ok(Date.now() - t0 < 20_000);
  await a.release();
});
