/** A webhook receiver on 127.0.0.1 for the notify tests: answers each request as `answer` says, keeps what it got. */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';

export interface Received {
  headers: IncomingMessage['headers'];
  body: string;
  at: number;
}

/** 'hang': never answers (the request is held until the receiver closes). */
export type Answer = number | 'hang';

export interface Receiver {
  url: string;
  got: Received[];
  /** answers the requests held so far ('hang') with `status` */
  release(status: number): void;
  close(): Promise<void>;
}

export async function receiver(answer: (n: number, r: Received) => Answer = () => 204): Promise<Receiver> {
  const got: Received[] = [];
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now() };
      got.push(r);
      const a = answer(got.length, r);
      if (a === 'hang') held.push(res);
      else res.writeHead(a).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const close = async () => {
    for (const res of held) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  after(close);
  const release = (status: number) => {
    for (const res of held.splice(0)) res.writeHead(status).end();
  };
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`, got, release, close };
}
