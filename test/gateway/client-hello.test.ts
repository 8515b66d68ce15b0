import assert from 'node:assert/strict';
import net from 'node:net';
import tls from 'node:tls';
import { test } from 'node:test';
import { helloProblem, MAX_HELLO, readClientHello } from '../../src/gateway/client-hello.js';

/** The bytes Node's own TLS client sends first, asking for `servername`: a real ClientHello. */
async function realHello(servername?: string): Promise<Buffer> {
  let got = Buffer.alloc(0);
  const server = net.createServer((s) => {
    s.on('data', (b) => {
      got = Buffer.concat([got, b]);
      if (readClientHello(got).kind !== 'more') s.destroy();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise<void>((resolve) => {
    const c = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, ...(servername ? { servername } : {}) });
    c.on('error', () => resolve());
    c.on('close', () => resolve());
  });
  server.close();
  return got;
}

/** A ClientHello made by hand: given extensions (type, body). */
function hello(extensions: Array<[number, Buffer]>): Buffer {
  const ext = Buffer.concat(extensions.map(([type, body]) => Buffer.concat([u16(type), u16(body.length), body])));
  const bodyParts = [Buffer.from([3, 3]), Buffer.alloc(32, 7), Buffer.from([0]), u16(2), Buffer.from([0x13, 0x01]), Buffer.from([1, 0]), u16(ext.length), ext];
  const body = Buffer.concat(bodyParts);
  const handshake = Buffer.concat([Buffer.from([1, body.length >> 16, (body.length >> 8) & 255, body.length & 255]), body]);
  return record(handshake);
}
const u16 = (n: number) => Buffer.from([n >> 8, n & 255]);
const record = (payload: Buffer) => Buffer.concat([Buffer.from([0x16, 3, 1]), u16(payload.length), payload]);
const sni = (...names: string[]) => {
  const list = Buffer.concat(names.map((n) => Buffer.concat([Buffer.from([0]), u16(n.length), Buffer.from(n, 'latin1')])));
  return Buffer.concat([u16(list.length), list]);
};

test("a real client's ClientHello is read, its server name with it", async () => {
  const bytes = await realHello('cdn-allowed.example');
  const read = readClientHello(bytes);
  assert.equal(read.kind, 'hello');
  assert.deepEqual(read.kind === 'hello' && read.names, ['cdn-allowed.example']);
  assert.equal(helloProblem(read as { names: string[]; ech: boolean }, 'CDN-Allowed.example.'), undefined);
  assert.match(helloProblem(read as { names: string[]; ech: boolean }, 'cdn-evil.example') ?? '', /a ClientHello for cdn-allowed\.example, in a tunnel opened for cdn-evil\.example/);
  // byte by byte, it waits for more until the whole hello is there
  for (const n of [0, 1, 5, 20, bytes.length - 1]) assert.equal(readClientHello(bytes.subarray(0, n)).kind, 'more', `${n} bytes`);
});

test('a ClientHello without a server name is refused (an address gives none)', async () => {
  const read = readClientHello(await realHello());
  assert.equal(read.kind, 'hello');
  assert.match(helloProblem(read as { names: string[]; ech: boolean }, 'cdn-allowed.example') ?? '', /without a server name/);
});

test('plain HTTP, SSH or anything else in a tunnel is not TLS', () => {
  for (const first of ['GET / HTTP/1.1\r\nHost: cdn-evil.example\r\n\r\n', 'POST /x HTTP/1.1\r\n', 'SSH-2.0-OpenSSH_9.2\r\n', '\x16\x01\x00\x00\x05hello']) {
    const read = readClientHello(Buffer.from(first, 'latin1'));
    assert.equal(read.kind, 'refuse', JSON.stringify(first));
  }
  // a handshake record whose message is not a ClientHello
  assert.deepEqual(readClientHello(record(Buffer.from([2, 0, 0, 1, 0]))), { kind: 'refuse', why: 'not TLS: the first handshake message is not a ClientHello' });
});

test('every name in the hello must be the host; an encrypted hello (ECH) is refused', () => {
  const two = readClientHello(hello([[0, sni('cdn-allowed.example', 'cdn-evil.example')]]));
  assert.match(helloProblem(two as { names: string[]; ech: boolean }, 'cdn-allowed.example') ?? '', /cdn-evil\.example/);
  const ech = readClientHello(hello([[0, sni('cdn-allowed.example')], [0xfe0d, Buffer.alloc(40, 1)]]));
  assert.match(helloProblem(ech as { names: string[]; ech: boolean }, 'cdn-allowed.example') ?? '', /ECH/);
  const odd = readClientHello(hello([[0, sni('evil\x1b[2J.example')]]));
  assert.match(helloProblem(odd as { names: string[]; ech: boolean }, 'cdn-allowed.example') ?? '', /evil\?\[2J\.example/, 'control characters are not echoed');
});

test('a hello spread over several records is put together; malformed lengths are refused', () => {
  const whole = hello([[0, sni('cdn-allowed.example')]]);
  const payload = whole.subarray(5);
  const split = Buffer.concat([record(payload.subarray(0, 10)), record(payload.subarray(10))]);
  const read = readClientHello(split);
  assert.deepEqual(read, { kind: 'hello', names: ['cdn-allowed.example'], ech: false });
  const broken = Buffer.from(whole);
  broken.writeUInt16BE(0xffff, whole.length - sni('cdn-allowed.example').length - 2); // the SNI extension's length
  assert.equal(readClientHello(broken).kind, 'refuse');
  assert.equal(readClientHello(Buffer.from([0x16, 3, 1, 0, 0])).kind, 'refuse', 'an empty record');
  // a hello that claims to be longer than the bound is refused before it is read
  const huge = record(Buffer.from([1, 0x10, 0, 0]));
  assert.equal(readClientHello(huge).kind, 'refuse');
  assert.ok(MAX_HELLO >= 16 * 1024);
});
