/**
 * A relay: one TCP port on the step's network that leads to one address and
 * port and nowhere else. On a swarm, a step whose network is `none` is on a
 * network of its own (internal) with the relay as its only member besides
 * itself, so it can fetch its workspace and send its work back to the runner
 * and reach nothing else.
 */
import net from 'node:net';
import { inSubnet } from './address.js';

export interface RelayTarget {
  host: string;
  port: number;
}

/**
 * Connections relayed at once. The transfer helper opens one at a time (two at most: a send and its ASK);
 * a step that opens thousands would hold as many sockets of the runner's transfer server.
 */
export const MAX_RELAYED = 8;

/** Listens on `address:port`, takes connections from `subnet` only, and joins each to `to`, at most MAX_RELAYED at once. */
export async function startRelay(address: string, port: number, subnet: string, to: RelayTarget, onError: (m: string) => void): Promise<net.Server> {
  let open = 0;
  let told = false;
  // half-open both ways: a sender that has said all (FIN) still hears the answer
  const server = net.createServer({ allowHalfOpen: true }, (socket) => {
    if (!inSubnet(subnet, socket.remoteAddress)) return void socket.destroy();
    if (open >= MAX_RELAYED) {
      if (!told) onError(`relay: more than ${MAX_RELAYED} connections at once from the step: the others are refused`);
      told = true;
      return void socket.destroy();
    }
    open++;
    socket.once('close', () => open--);
    const out = net.connect({ port: to.port, host: to.host, allowHalfOpen: true });
    out.on('error', (err) => {
      onError(`relay to ${to.host}:${to.port}: ${err.message}`);
      socket.destroy();
    });
    socket.on('error', () => out.destroy());
    socket.pipe(out);
    out.pipe(socket);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, resolve);
  });
  return server;
}
