/**
 * Locks the kernel holds for a live process and releases the moment it dies
 * (kill -9 and SIGSTOP included: a paused holder keeps its lock; no lock is
 * ever taken over on a timer). Each is an abstract Unix socket (Linux) named
 * after what it guards: "can I bind the name?" is "is it free?".
 */
import { createHash } from 'node:crypto';
import net from 'node:net';

export interface HeldLock {
  release(): Promise<void>;
}

function socketName(scope: string, key: string): string {
  return `\0dev.runner/${scope}/${createHash('sha256').update(key).digest('hex').slice(0, 32)}`;
}

/** Takes the lock, or returns undefined at once when another process holds it. */
export async function tryLock(scope: string, key: string): Promise<HeldLock | undefined> {
  const server = net.createServer((c) => c.destroy());
  const bound = await new Promise<boolean>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => (err.code === 'EADDRINUSE' ? resolve(false) : reject(err)));
    server.listen(socketName(scope, key), () => resolve(true));
  });
  if (!bound) return undefined;
  server.unref();
  return { release: () => new Promise<void>((r) => server.close(() => r())) };
}

/** Waits for the lock, polling; `onWait` is told once; throws what `abort` returns when the signal fires. */
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
    await new Promise((r) => setTimeout(r, o.pollMs ?? 200));
  }
}

/** True while some process holds the lock. */
export async function isLocked(scope: string, key: string): Promise<boolean> {
  const held = await tryLock(scope, key);
  if (!held) return true;
  await held.release();
  return false;
}
