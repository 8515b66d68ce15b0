/**
 * Locks the kernel holds for a live process and releases the moment it dies
 * (kill -9 and SIGSTOP included: a paused holder keeps its lock; no lock is
 * ever taken over on a timer). Each is an abstract Unix socket (Linux) named
 * after what it guards: "can I bind the name?" is "is it free?".
 *
 * A waiter is woken at the release, not at its next poll: it connects to the
 * holder's socket, which says HELD and keeps the connection until it lets go
 * (or dies, when the kernel closes it). Sixteen runs on one repository then
 * take its lock one after another with no idle gap between them. A holder
 * that does not say HELD (a runner from before this) is polled, as before.
 */
import { createHash } from 'node:crypto';
import net from 'node:net';

export interface HeldLock {
  release(): Promise<void>;
}

/** The abstract socket a lock is (exported for tests that play a holder of another version). */
export function socketName(scope: string, key: string): string {
  return `\0dev.runner/${scope}/${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/** what a holder says to a waiter that connects: it will close the connection when it lets go */
const HELD = 'H';
/** waiters a holder keeps connected at once (more are closed at once, and poll) */
const MAX_WAITERS = 256;

/** Takes the lock, or returns undefined at once when another process holds it. */
export async function tryLock(scope: string, key: string): Promise<HeldLock | undefined> {
  const waiters = new Set<net.Socket>();
  const server = net.createServer((c) => {
    c.on('error', () => undefined);
    // a waiter never keeps the holder's process alive, and never sends anything that matters
    c.unref();
    c.on('data', () => undefined);
    if (waiters.size >= MAX_WAITERS) return void c.destroy();
    waiters.add(c);
    c.on('close', () => waiters.delete(c));
    c.write(HELD);
  });
  const bound = await new Promise<boolean>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen(socketName(scope, key), () => resolve(true));
  });
  if (!bound) return undefined;
  server.unref();
  return {
    release: () =>
      new Promise<void>((r) => {
        // the name is let go of, then the waiters hear it (a server closes only once its connections have)
        server.close(() => r());
        for (const c of waiters) c.destroy();
      }),
  };
}

/**
 * Resolves when the holder of the lock lets go (its connection closes after it said HELD), or after `ms` at the
 * latest (a holder that says nothing, a name no one holds any more, a signal that fires).
 */
function untilReleased(scope: string, key: string, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    let heard = false;
    const c = net.connect(socketName(scope, key));
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      c.destroy();
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
    let connected = false;
    c.on('connect', () => (connected = true));
    c.on('data', (b: Buffer) => {
      if (b.toString('latin1').includes(HELD)) heard = true;
    });
    // closed by a holder that said HELD: it let go (or died). Closed without it: a holder that died before it took
    // the connection (its name is then free: a second connect is refused), or a holder of before (which takes it
    // and closes it at once): then wait out the poll
    c.on('close', () => {
      if (heard) return done();
      const probe = net.connect(socketName(scope, key));
      probe.on('connect', () => probe.destroy());
      probe.on('error', () => done());
    });
    // no one listens (it let go since the try): try again, after a breath (its name may be a moment from free)
    c.on('error', () => {
      if (!connected) setTimeout(done, 5);
    });
  });
}

/** Waits for the lock, woken at its release (polling at most every `pollMs`); `onWait` is told once; throws what `abort` returns when the signal fires. */
export async function waitLock(
  scope: string,
  key: string,
  o: { signal?: AbortSignal; onWait?: () => void; pollMs?: number; abort?: () => Error },
): Promise<HeldLock> {
  let told = false;
  for (;;) {
    const held = await tryLock(scope, key);
    if (held) return held;
    if (!told) {
      o.onWait?.();
      told = true;
    }
    if (o.signal?.aborted) throw o.abort?.() ?? new Error('aborted while waiting for a lock');
    await untilReleased(scope, key, o.pollMs ?? 200, o.signal);
  }
}

/** True while some process holds the lock. */
export async function isLocked(scope: string, key: string): Promise<boolean> {
  const held = await tryLock(scope, key);
  if (!held) return true;
  await held.release();
  return false;
}
