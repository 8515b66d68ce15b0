/**
 * Where steps on other nodes fetch their workspace and send their work back
 * (engine swarm). A plain TCP protocol, spoken by the step's transfer helper
 * (images/gateway/transfer/runner-transfer.c, a static program):
 * one line `GET <token> <part>` or `PUT <token> <part>`, then the tar, or
 * `ASK <token> <part>`, answered `ok` once that part's send was all received
 * (a container that ends before its last bytes left its node loses them:
 * the step asks before it exits). Each token is one step's, given to it as a
 * swarm secret (never in its environment or command line), and good for one
 * fetch and one send of each part; a send is capped in bytes and received as
 * hostile (tar-transfer.ts).
 */
import { randomBytes } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { DEFAULT_RECEIVE_LIMITS, packTree, receiveTree, type ReceiveReport } from '../../workspace/tar-transfer.js';

export type Part = 'w' | 'io';

export interface Transfer {
  token: string;
  /** resolves when the step sent `part` back (received into its staging directory), rejects when that failed */
  received(part: Part): Promise<ReceiveReport>;
  /** stops accepting for this token */
  close(): void;
}

interface Entry {
  dirs: Record<Part, string>;
  staging: Record<Part, string>;
  owner: { uid: number; gid: number };
  /** sent as part w's `.git` (git-copy.ts), once made (undefined: none) */
  gitDir: Promise<string | undefined> | string | undefined;
  fetched: Set<Part>;
  sent: Map<Part, Promise<ReceiveReport>>;
  /** ASK sockets waiting, per part */
  asks: Record<Part, Set<net.Socket>>;
  waiters: Map<Part, { resolve: (r: ReceiveReport) => void; reject: (e: Error) => void; p: Promise<ReceiveReport> }>;
}

const MAX_LINE = 256;
/** The helper sends its line at once on connecting: a socket that has said nothing by then is closed. */
export const LINE_MS = 15_000;
/** ASKs open at once for one part: the helper asks once; more only hold the runner's sockets (a step can open thousands). */
const MAX_ASKS = 2;

export class TransferServer {
  private readonly entries = new Map<string, Entry>();
  private server: net.Server | undefined;
  port = 0;

  /** lineMs: how long a connection may take to send its line (tests shorten it) */
  constructor(private readonly lineMs = LINE_MS) {}

  async listen(): Promise<void> {
    if (this.server) return;
    this.server = net.createServer((socket) => this.serve(socket));
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(0, '0.0.0.0', () => resolve());
    });
    this.port = (this.server.address() as net.AddressInfo).port;
    this.server.unref();
  }

  /**
   * A token for one step: it fetches `dirs`, and what it sends back goes to `staging` (fresh paths). `gitDir`: a
   * repository sent as the workspace's `.git` (the step's copy of the history, git-copy.ts); a fetch waits for it
   * while it is being made.
   */
  open(dirs: Record<Part, string>, staging: Record<Part, string>, owner: { uid: number; gid: number }, gitDir?: Promise<string | undefined> | string): Transfer {
    const token = randomBytes(24).toString('hex');
    const waiters = new Map<Part, { resolve: (r: ReceiveReport) => void; reject: (e: Error) => void; p: Promise<ReceiveReport> }>();
    for (const part of ['w', 'io'] as Part[]) {
      let resolve!: (r: ReceiveReport) => void;
      let reject!: (e: Error) => void;
      const p = new Promise<ReceiveReport>((res, rej) => ((resolve = res), (reject = rej)));
      p.catch(() => undefined);
      waiters.set(part, { resolve, reject, p });
    }
    const asks: Record<Part, Set<net.Socket>> = { w: new Set(), io: new Set() };
    this.entries.set(token, { dirs, staging, owner, gitDir, fetched: new Set(), sent: new Map(), waiters, asks });
    return {
      token,
      received: (part) => waiters.get(part)!.p,
      close: () => {
        this.entries.delete(token);
        // nothing waits for this step any more: its waiting ASKs go with it
        for (const set of Object.values(asks)) for (const s of set) s.destroy();
      },
    };
  }

  private serve(socket: net.Socket): void {
    socket.on('error', () => undefined);
    let head = Buffer.alloc(0);
    const onData = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const nl = head.indexOf(0x0a);
      if (nl < 0) {
        if (head.length > MAX_LINE) socket.destroy();
        return;
      }
      socket.off('data', onData);
      clearTimeout(silent);
      socket.pause();
      const rest = head.subarray(nl + 1);
      if (rest.length) socket.unshift(rest);
      this.handle(head.subarray(0, nl).toString('latin1').trim(), socket);
    };
    socket.on('data', onData);
    // a slowloris (thousands of sockets that never finish their line) would hold as many of the runner's files:
    // the line comes at once or not at all, then the transfer may idle a while
    const silent = setTimeout(() => socket.destroy(), this.lineMs);
    socket.once('close', () => clearTimeout(silent));
    socket.setTimeout(10 * 60_000, () => socket.destroy());
  }

  private handle(line: string, socket: net.Socket): void {
    const [verb, token, part] = line.split(' ') as [string, string, Part];
    const e = token ? this.entries.get(token) : undefined;
    if (!e || (part !== 'w' && part !== 'io')) return void socket.destroy();
    if (verb === 'GET' && !e.fetched.has(part)) {
      e.fetched.add(part);
      void Promise.resolve(part === 'w' ? e.gitDir : undefined).then((gitDir) => {
        const tar = packTree(e.dirs[part], gitDir);
        tar.on('error', () => socket.destroy());
        tar.pipe(socket);
      });
      return;
    }
    if (verb === 'PUT' && !e.sent.has(part)) {
      const w = e.waiters.get(part)!;
      const p = receiveTree(capped(socket, DEFAULT_RECEIVE_LIMITS.maxBytes + 64 * 1024 ** 2), e.staging[part], e.owner);
      e.sent.set(part, p);
      p.then(w.resolve, w.reject);
      // the whole send is in: the sender's side closes (it may wait for this)
      p.then(() => socket.end(), () => socket.destroy());
      return;
    }
    if (verb === 'ASK') {
      const asks = e.asks[part];
      if (asks.size >= MAX_ASKS) return void socket.destroy();
      asks.add(socket);
      socket.once('close', () => asks.delete(socket));
      socket.resume();
      e.waiters.get(part)!.p.then(
        () => socket.end('ok\n'),
        (err: Error) => socket.end(`failed ${err.message.replace(/\s+/g, ' ').slice(0, 200)}\n`),
      );
      return;
    }
    socket.destroy();
  }

  async close(): Promise<void> {
    await new Promise<void>((r) => (this.server ? this.server.close(() => r()) : r()));
  }
}

/** The socket, ended by force past `max` bytes (the tar then fails as cut short). */
function capped(socket: net.Socket, max: number): Readable {
  let n = 0;
  const counter = new Transform({
    transform(b: Buffer, _enc, next) {
      n += b.length;
      if (n > max) {
        socket.destroy();
        return next(new Error(`the step sent more than ${max} bytes`));
      }
      next(null, b);
    },
  });
  socket.on('error', (err) => counter.destroy(err));
  return socket.pipe(counter);
}

/** A path beside `dir` for what comes back, fresh. */
export function stagingFor(dir: string, part: Part | 'git'): string {
  return path.join(path.dirname(dir), `.${path.basename(dir)}.${part}-back-${randomBytes(4).toString('hex')}`);
}
