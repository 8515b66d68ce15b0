/**
 * Tells a live run from a dead one without guessing from timestamps: a live
 * run holds an abstract Unix socket named after its runner home and run id.
 * The kernel releases it the moment the process dies, kill -9 included, so
 * "can I bind it?" answers "is its owner gone?" exactly.
 */
import { createHash } from 'node:crypto';
import net from 'node:net';

function socketName(home: string, runId: string): string {
  const h = createHash('sha256').update(home).digest('hex').slice(0, 16);
  return `\0dev.runner/${h}/${runId}`;
}

/** Held for the life of the run; release() when it ends. */
export async function holdOwnerLock(home: string, runId: string): Promise<{ release: () => Promise<void> }> {
  const server = net.createServer((c) => c.destroy());
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(socketName(home, runId), () => resolve());
  });
  server.unref();
  return { release: () => new Promise<void>((r) => server.close(() => r())) };
}

/** True while some process holds the run's owner lock. */
export async function ownerAlive(home: string, runId: string): Promise<boolean> {
  const probe = net.createServer();
  return new Promise<boolean>((resolve) => {
    probe.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'EADDRINUSE'));
    probe.listen(socketName(home, runId), () => probe.close(() => resolve(false)));
  });
}
