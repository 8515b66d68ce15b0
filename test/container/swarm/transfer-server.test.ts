/**
 * The transfer server a step on another node fetches its workspace from and
 * sends its work back to: one fetch and one send of each part per token, a
 * wrong token gets nothing, what comes back is received as hostile.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import tarStream from 'tar-stream';
import { stagingFor, TransferServer } from '../../../src/container/swarm/transfer-server.js';

const server = new TransferServer();
const roots: string[] = [];
after(async () => {
  await server.close();
  await Promise.all(roots.map((r) => rm(r, { recursive: true, force: true })));
});
const owner = { uid: process.getuid!(), gid: process.getgid!() };

async function dirs() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'runner-transfer-'));
  roots.push(root);
  const w = path.join(root, 'w');
  const io = path.join(root, 'io');
  await mkdir(w);
  await mkdir(io);
  await writeFile(path.join(w, 'a.txt'), 'from the runner');
  return { w, io };
}

/** Sends one line and, for a PUT, a body; resolves with what came back. */
function talk(line: string, body?: Buffer): Promise<Buffer> {
  return new Promise((resolve) => {
    const s = net.connect(server.port, '127.0.0.1', () => {
      s.write(`${line}\n`);
      if (body) s.end(body);
    });
    const got: Buffer[] = [];
    s.on('data', (b) => got.push(b));
    s.on('close', () => resolve(Buffer.concat(got)));
    s.on('error', () => resolve(Buffer.concat(got)));
  });
}

function tarOf(entries: Array<{ name: string; body?: string; type?: string; linkname?: string }>): Promise<Buffer> {
  const pack = tarStream.pack();
  for (const { body, ...h } of entries) pack.entry({ mode: 0o644, ...h } as tarStream.Header, body ?? '');
  pack.finalize();
  const parts: Buffer[] = [];
  return new Promise((r) => {
    pack.on('data', (b: unknown) => parts.push(b as Buffer));
    pack.on('end', () => r(Buffer.concat(parts)));
  });
}

test('a token fetches its workspace once and sends its work back once; the work is received as hostile', async () => {
  await server.listen();
  const d = await dirs();
  const staging = { w: stagingFor(d.w, 'w'), io: stagingFor(d.io, 'io') };
  const t = server.open(d, staging, owner);
  const first = await talk(`GET ${t.token} w`);
  assert.ok(first.includes(Buffer.from('from the runner')), 'the workspace as a tar');
  assert.equal((await talk(`GET ${t.token} w`)).length, 0, 'a second fetch gets nothing');
  assert.equal((await talk(`GET ${'0'.repeat(48)} w`)).length, 0, 'a wrong token gets nothing');
  await talk(`PUT ${t.token} w`, await tarOf([{ name: 'b.txt', body: 'from the step' }, { name: '../up.txt', body: 'x' }]));
  const got = await t.received('w');
  assert.equal(await readFile(path.join(staging.w, 'b.txt'), 'utf8'), 'from the step');
  assert.match(got.refused.join('\n'), /\.\.\/up\.txt: a path with \.\./);
  await talk(`PUT ${t.token} w`, await tarOf([{ name: 'again.txt', body: 'x' }]));
  await assert.rejects(readFile(path.join(staging.w, 'again.txt')), 'a second send is not taken');
  t.close();
  assert.equal((await talk(`GET ${t.token} io`)).length, 0, 'a closed token gets nothing');
});

test('ASK is answered ok once a part sent back is all received, so a step can wait before it ends', async () => {
  await server.listen();
  const d = await dirs();
  const staging = { w: stagingFor(d.w, 'w'), io: stagingFor(d.io, 'io') };
  const t = server.open(d, staging, owner);
  const asked = talk(`ASK ${t.token} w`);
  let answered = false;
  void asked.then(() => (answered = true));
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(answered, false, 'no answer before the work is sent');
  await talk(`PUT ${t.token} w`, await tarOf([{ name: 'b.txt', body: 'from the step' }]));
  assert.equal((await asked).toString(), 'ok\n');
  assert.equal(await readFile(path.join(staging.w, 'b.txt'), 'utf8'), 'from the step');
  assert.equal((await talk(`ASK ${'0'.repeat(48)} w`)).length, 0, 'a wrong token gets no answer');
  t.close();
});

test('a slowloris holds nothing: a connection that does not send its line at once is closed, and ASKs beyond two are refused', async () => {
  const quick = new TransferServer(300);
  await quick.listen();
  try {
    const held = Array.from({ length: 20 }, () => {
      const s = net.connect(quick.port, '127.0.0.1', () => s.write('GET '));
      s.on('error', () => undefined);
      return new Promise<number>((resolve) => {
        const t0 = Date.now();
        s.on('close', () => resolve(Date.now() - t0));
      });
    });
    // closed (held, they would never close); the bound only keeps a broken server from holding the test forever
    for (const ms of await Promise.all(held)) assert.ok(ms < 30_000, `closed after ${ms} ms`);
    // a step's own token: two ASKs wait for its part, a third is closed at once, and all go when its token does
    const d = await dirs();
    const t = quick.open(d, { w: stagingFor(d.w, 'w'), io: stagingFor(d.io, 'io') }, owner);
    // In the order of events, not of the clock: one ASK is closed while the token is open, then the token closes
    // and the other two go with it.
    let tokenOpen = true;
    const closedWhileOpen: boolean[] = [];
    const asks = Array.from({ length: 3 }, () => {
      const s = net.connect(quick.port, '127.0.0.1', () => s.write(`ASK ${t.token} w\n`));
      s.on('error', () => undefined);
      return new Promise<void>((resolve) => s.on('close', () => resolve(void closedWhileOpen.push(tokenOpen))));
    });
    await Promise.race(asks);
    // a moment for a second close, had the server closed more than one at once
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(closedWhileOpen, [true], 'the third ASK was closed at once, the other two wait for their part');
    tokenOpen = false;
    t.close();
    await Promise.all(asks);
    assert.deepEqual(closedWhileOpen, [true, false, false], 'two waited until the token closed');
  } finally {
    await quick.close();
  }
});
