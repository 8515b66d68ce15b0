/**
 * Inspection attacked, engine-free (issue 33): a hostile step, and a careless
 * file, against the gateway's server on loopback. The upstream is hostile too:
 * it answers every request with what arrived (its headers, Authorization
 * included, its trailers, its body's length), so a credential that went where
 * it should not is seen. Each attack either holds (a regression test) or was a
 * hole fixed in the file named beside it.
 *
 * As in inspected.test.ts, the upstreams are the test's own on 127.0.0.1,
 * reached through the test company proxy (the address policy never lets a
 * name lead to loopback).
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type net from 'node:net';
import tls from 'node:tls';
import { webcrypto } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import { after, before, test } from 'node:test';
import type { GatewayEvent, Inspection } from '../../src/gateway/config.js';
import { Refusals, type Egress } from '../../src/gateway/egress.js';
import { Inspector } from '../../src/gateway/inspected.js';
import { withRoots } from '../../src/gateway/outgoing.js';
import { RunCa } from '../../src/gateway/run-ca.js';
import { gatewayServer } from '../../src/gateway/server.js';
import { startConnectProxy, type TestProxy } from '../fixtures/connect-proxy.js';
import { makeTestCa, type TestCa } from '../fixtures/test-ca.js';

const DB_PASSWORD = 'attack-Db-s3cret-value-42';
const TOKEN = 'ghp_attackCredential0123456789';
const MAX_BODY = 256 * 1024;

interface Arrived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  trailers: Record<string, string>;
  length: number;
}

let testCa: TestCa;
let upstream: https.Server;
let plainUpstream: http.Server;
let proxy: TestProxy;
const arrived: Arrived[] = [];

const inspect: Inspection = {
  hosts: [
    {
      host: 'api.example',
      methods: ['GET', 'POST'],
      paths: ['/repos/acme/app/**'],
      rule: '{ host: api.example, methods: [GET, POST], paths: [/repos/acme/app/**] }',
      credential: { name: 'api-token', headers: { Authorization: `Bearer ${TOKEN}` } },
    },
    { host: 'nocred.example', methods: ['GET', 'POST'], rule: '{ host: nocred.example, methods: [GET, POST] }' },
    { host: 'git.example', stream: true, credential: { name: 'git-token', headers: { 'X-Token': TOKEN } } },
  ],
  secrets: [
    { name: 'DB_PASSWORD', value: DB_PASSWORD },
    { name: 'api-token', value: TOKEN },
  ],
  maxBodyBytes: MAX_BODY,
};

/** The hostile upstream: answers with everything that arrived, Authorization included. */
function reflect(req: http.IncomingMessage, res: http.ServerResponse): void {
  let length = 0;
  req.on('data', (b: Buffer) => (length += b.length));
  req.on('end', () => {
    const a: Arrived = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, trailers: { ...req.trailers } as Record<string, string>, length };
    arrived.push(a);
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify(a));
  });
}

before(async () => {
  testCa = makeTestCa(['api.example', 'nocred.example', 'git.example', 'tunnel.example']);
  upstream = https.createServer({ key: testCa.key, cert: testCa.cert }, reflect);
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  plainUpstream = http.createServer(reflect);
  await new Promise<void>((r) => plainUpstream.listen(0, '127.0.0.1', r));
  const tlsPort = (upstream.address() as net.AddressInfo).port;
  const plainPort = (plainUpstream.address() as net.AddressInfo).port;
  proxy = await startConnectProxy((_host, port) => ({ host: '127.0.0.1', port: port === 443 ? tlsPort : plainPort }));
});

after(async () => {
  await proxy?.close();
  upstream?.closeAllConnections();
  upstream?.close();
  plainUpstream?.closeAllConnections();
  plainUpstream?.close();
  testCa?.close();
});

interface Gateway {
  port: number;
  events: GatewayEvent[];
  runCa: RunCa;
  /** every body the gateway itself answered (not the upstream's): none may hold a value */
  close(): void;
}

async function startGateway(i: Inspection = inspect): Promise<Gateway> {
  const allow = ['api.example', 'nocred.example', 'git.example', 'tunnel.example', 'git.example:8080'];
  const events: GatewayEvent[] = [];
  const egress: Egress = { allow, refusals: new Refusals((host, reason) => events.push({ event: 'refused', host, reason })), policy: { hostAddresses: [], privateAllowed: [] }, proxy: { host: '127.0.0.1', port: proxy.port, noProxy: [] } };
  const runCa = await RunCa.make(i.hosts.map((h) => h.host), 3_600_000);
  const inspector = new Inspector(i, runCa, egress, withRoots(testCa.caPem), (e) => events.push(e));
  egress.inspector = inspector;
  const server = gatewayServer({ allow, prices: {}, listenSubnet: '127.0.0.0/8' }, undefined, egress);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    events,
    runCa,
    close: () => {
      inspector.close();
      server.closeAllConnections();
      server.close();
    },
  };
}

/** CONNECT `connectHost`:443, then TLS with `servername`, trusting `ca` (the run's CA by default). */
async function tunnelTo(g: Gateway, connectHost: string, o: { servername?: string; alpn?: string[]; ca?: string } = {}): Promise<tls.TLSSocket> {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: g.port, method: 'CONNECT', path: `${connectHost}:443` });
    req.on('connect', (res, s: net.Socket) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT: ${res.statusCode}`))));
    req.on('error', reject);
    req.end();
  });
  return new Promise((resolve, reject) => {
    const t = tls.connect({ socket, servername: o.servername ?? connectHost.replace(/\.$/, ''), ca: o.ca ?? g.runCa.pem, ALPNProtocols: o.alpn ?? ['http/1.1'] }, () => resolve(t));
    t.on('error', reject);
  });
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function collect(res: http.IncomingMessage, resolve: (a: Answer) => void): void {
  let body = '';
  res.setEncoding('utf8');
  res.on('data', (c: string) => (body += c));
  res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
}

async function h1(g: Gateway, connectHost: string, path: string, o: { method?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer | string; servername?: string } = {}): Promise<Answer> {
  const t = await tunnelTo(g, connectHost, { servername: o.servername });
  return new Promise((resolve, reject) => {
    const req = https.request({ host: 'x', path, method: o.method ?? 'GET', headers: o.headers, createConnection: () => t }, (res) => collect(res, resolve));
    req.on('error', reject);
    req.end(o.body);
  });
}

/** Raw bytes over a TLS tunnel to `host`; everything read until the gateway closes or `ms` passes (long: a loaded CI machine took more than 1.5 s to answer; every request here ends by a close). */
async function raw(g: Gateway, host: string, bytes: string | Buffer, ms = 20_000): Promise<string> {
  const t = await tunnelTo(g, host);
  return new Promise((resolve) => {
    let got = '';
    t.setEncoding('utf8');
    t.on('data', (c: string) => (got += c));
    const done = () => resolve(got);
    t.on('close', done);
    t.on('error', done);
    setTimeout(() => {
      t.destroy();
      done();
    }, ms);
    t.write(bytes);
  });
}

/** A plain-HTTP request in absolute form through the gateway. */
function plain(g: Gateway, url: string, o: { method?: string; headers?: http.OutgoingHttpHeaders } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: g.port, method: o.method ?? 'GET', path: url, headers: o.headers }, (res) => collect(res, resolve));
    req.on('error', reject);
    req.end();
  });
}

const noValueIn = (what: string, text: string) => {
  assert.ok(!text.includes(TOKEN), `${what} holds the credential`);
  assert.ok(!text.includes(DB_PASSWORD), `${what} holds the secret`);
};

test('a trailing dot or upper case on the CONNECT host is still the inspected host: its rules hold and its TLS is the gateway\'s', async () => {
  // hole found: reads() compared 'api.example.' with 'api.example' and passed the tunnel through uninspected (fixed in request-rules.ts ruleFor)
  const g = await startGateway();
  try {
    arrived.length = 0;
    for (const host of ['api.example.', 'API.Example', 'API.EXAMPLE.']) {
      const del = await h1(g, host, '/repos/acme/app', { method: 'DELETE' }).catch((err: Error) => ({ status: 0, headers: {}, body: err.message }));
      assert.equal(del.status, 403, `${host}: ${del.body}`);
      const ok = await h1(g, host, '/repos/acme/app/x');
      assert.equal(ok.status, 200, `${host}: ${ok.body}`);
      assert.equal((JSON.parse(ok.body) as Arrived).headers.authorization, `Bearer ${TOKEN}`, 'the credential goes to its own host, whatever the case');
    }
    assert.ok(!arrived.some((a) => a.method === 'DELETE'));
    // and a tunnel there trusting the host's own root (not the gateway's) gets no connection: it is not passed through
    await assert.rejects(tunnelTo(g, 'api.example.', { ca: testCa.caPem }), /self-signed|unable to verify|certificate/i);
  } finally {
    g.close();
  }
});

test('plain HTTP to a credentialed host is refused (the credential never goes out in clear text); a trailing dot does not escape a rule', async () => {
  // hole found: the gateway added the credential to absolute-form http:// requests (fixed in inspected.ts plain)
  const g = await startGateway();
  try {
    arrived.length = 0;
    for (const url of ['http://api.example/repos/acme/app/x', 'http://API.EXAMPLE./repos/acme/app/x', 'http://git.example:8080/x']) {
      const a = await plain(g, url);
      assert.equal(a.status, 403, `${url}: ${a.body}`);
      assert.match(a.body, /https/);
      noValueIn(url, a.body);
    }
    assert.deepEqual(arrived, [], 'nothing reached the host, and no credential crossed the wire in clear');
    // a rule-only host over plain HTTP: the rule holds with a trailing dot or upper case
    for (const url of ['http://nocred.example./x', 'http://NOCRED.EXAMPLE/x']) {
      assert.equal((await plain(g, url, { method: 'DELETE' })).status, 403, url);
    }
    const got = await plain(g, 'http://nocred.example./x');
    assert.equal(got.status, 200, got.body);
    assert.equal((JSON.parse(got.body) as Arrived).headers.authorization, undefined);
    assert.ok(!(arrived as Arrived[]).some((a) => a.method === 'DELETE'));
  } finally {
    g.close();
  }
});

test('the credential goes to its own host only: Host, :authority, an absolute target or the SNI naming it in a tunnel to another host add nothing', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    // HTTP/1.1 in a tunnel to nocred.example, naming api.example every way it can
    const a = await h1(g, 'nocred.example', 'https://api.example/repos/acme/app/x', { headers: { host: 'api.example' } });
    assert.equal(a.status, 200, a.body);
    const got = JSON.parse(a.body) as Arrived;
    assert.equal(got.headers.authorization, undefined);
    assert.equal(got.headers.host, 'nocred.example');
    assert.equal(got.url, '/repos/acme/app/x');
    // HTTP/2 with :authority naming the credentialed host
    const t = await tunnelTo(g, 'nocred.example', { alpn: ['h2'] });
    const session = http2.connect('https://nocred.example', { createConnection: () => t });
    const h2 = await new Promise<Answer>((resolve, reject) => {
      const s = session.request({ ':path': '/x', ':authority': 'api.example', host: 'api.example' });
      let body = '';
      let status = 0;
      s.on('response', (h) => (status = Number(h[':status'])));
      s.setEncoding('utf8');
      s.on('data', (c: string) => (body += c));
      s.on('end', () => resolve({ status, headers: {}, body }));
      s.on('error', reject);
      s.end();
    });
    session.close();
    assert.equal(h2.status, 200, h2.body);
    assert.equal((JSON.parse(h2.body) as Arrived).headers.authorization, undefined);
    assert.equal((JSON.parse(h2.body) as Arrived).headers.host, 'nocred.example');
    // a tunnel opened for nocred.example whose ClientHello names api.example: closed, nothing sent
    await assert.rejects(tunnelTo(g, 'nocred.example', { servername: 'api.example' }));
    // a tunnel to a host without a rule whose ClientHello names the credentialed host: closed too
    await assert.rejects(tunnelTo(g, 'tunnel.example', { servername: 'api.example', ca: testCa.caPem }));
    assert.ok(!arrived.some((x) => x.headers.authorization !== undefined || x.headers['x-token'] !== undefined));
  } finally {
    g.close();
  }
});

test('smuggling between the step and the gateway: TE with CL, two Content-Lengths, obs-fold, and a pipelined second request are each judged or refused', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const smuggled = 'DELETE /repos/acme/app HTTP/1.1\r\nHost: api.example\r\nContent-Length: 0\r\n\r\n';
    // Transfer-Encoding and Content-Length together
    const teCl = await raw(g, 'api.example', `POST /repos/acme/app/x HTTP/1.1\r\nHost: api.example\r\nContent-Length: ${5 + smuggled.length}\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n${smuggled}`);
    assert.match(teCl, /^HTTP\/1\.1 400/, teCl);
    // two different Content-Lengths
    const twoCl = await raw(g, 'api.example', `POST /repos/acme/app/x HTTP/1.1\r\nHost: api.example\r\nContent-Length: 0\r\nContent-Length: ${smuggled.length}\r\n\r\n${smuggled}`);
    assert.match(twoCl, /^HTTP\/1\.1 400/, twoCl);
    // a header folded over two lines (obs-fold), the secret split across the fold
    const fold = await raw(g, 'api.example', `GET /repos/acme/app/x HTTP/1.1\r\nHost: api.example\r\nX-Note: ${DB_PASSWORD.slice(0, 10)}\r\n ${DB_PASSWORD.slice(10)}\r\nConnection: close\r\n\r\n`);
    assert.match(fold, /^HTTP\/1\.1 400/, fold);
    // pipelined: an allowed GET, then a DELETE the rule refuses, on one keep-alive connection
    const piped = await raw(g, 'api.example', `GET /repos/acme/app/one HTTP/1.1\r\nHost: api.example\r\n\r\n${smuggled}GET /repos/acme/app/three HTTP/1.1\r\nHost: api.example\r\nConnection: close\r\n\r\n`);
    assert.match(piped, /^HTTP\/1\.1 200/, piped);
    assert.match(piped, /HTTP\/1\.1 403/, piped);
    assert.ok(!arrived.some((a) => a.method === 'DELETE'), JSON.stringify(arrived.map((a) => `${a.method} ${a.url}`)));
    assert.ok(!arrived.some((a) => JSON.stringify(a.headers).includes(DB_PASSWORD.slice(10))), 'the folded header did not go');
    noValueIn('answers', teCl + twoCl + fold + piped.replace(/\{[^\n]*\}/g, ''));
  } finally {
    g.close();
  }
});

test('a method override header is judged as the method: X-HTTP-Method-Override: DELETE on an allowed POST is refused', async () => {
  // hole found: a POST with X-HTTP-Method-Override: DELETE passed a methods: [GET, POST] rule (fixed in inspected-request.ts)
  const g = await startGateway();
  try {
    arrived.length = 0;
    for (const name of ['X-HTTP-Method-Override', 'x-http-method', 'X-Method-Override']) {
      const a = await h1(g, 'api.example', '/repos/acme/app/x', { method: 'POST', headers: { [name]: 'delete' } });
      assert.equal(a.status, 403, `${name}: ${a.body}`);
      assert.match(a.body, /DELETE/);
    }
    // an override naming an allowed method is no different from that method
    const ok = await h1(g, 'api.example', '/repos/acme/app/x', { method: 'POST', headers: { 'x-http-method-override': 'GET' } });
    assert.equal(ok.status, 200, ok.body);
    assert.deepEqual(
      arrived.map((a) => a.method),
      ['POST'],
    );
    assert.ok(g.events.some((e) => e.event === 'egress_refused' && e.method === 'DELETE'));
  } finally {
    g.close();
  }
});

test('encoded paths: double encoding (%252e, %252f), mixed case, overlong UTF-8 and ";" parameters never leave the rule\'s paths', async () => {
  // hole found: %252e%252e passed /repos/acme/app/** and reads as ".." on a server that decodes twice (fixed in request-rules.ts)
  const g = await startGateway();
  try {
    arrived.length = 0;
    const refused = [
      '/repos/acme/app/%252e%252e/%252e%252e/other',
      '/repos/acme/app/%252E%252E%252F..%252Fother',
      '/repos/acme/app%252f..%252f..%252fother',
      '/repos/acme/app/%2E%2e/%2e%2E/other',
      '/repos/acme/app/%c0%ae%c0%ae/other',
      '/repos/acme/app/%e0%80%ae%e0%80%ae/other',
      '/repos/acme/app/..;/..;/other',
      '/repos/acme/app;x/../../other',
      '/repos/acme/app/.%2e/.%2E/other',
      '/repos/acme/app/%2e%2e%2f%2e%2e%2fother',
      '/repos/acme/app/%5c..%5c..%5cother',
    ];
    for (const p of refused) {
      const a = await h1(g, 'api.example', p);
      assert.ok(a.status === 403 || a.status === 400, `${p}: ${a.status} ${a.body}`);
    }
    assert.deepEqual(
      arrived.map((a) => a.url),
      [],
    );
    // what is allowed still goes, as normalized
    const ok = await h1(g, 'api.example', '/repos/acme/app/%41pp;v=1/%7euser');
    assert.equal(ok.status, 200, ok.body);
    assert.equal((JSON.parse(ok.body) as Arrived).url, '/repos/acme/app/App;v=1/~user');
  } finally {
    g.close();
  }
});

test('secrets: split across chunks, in multipart, in trailers, with 100-continue, in an HTTP/2 path, on an upgrade: stopped or never sent', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const t = await tunnelTo(g, 'api.example');
    // the value split across two chunks of a chunked body, written apart
    const split = await new Promise<Answer>((resolve, reject) => {
      const req = https.request({ host: 'api.example', path: '/repos/acme/app/x', method: 'POST', headers: { 'transfer-encoding': 'chunked' }, createConnection: () => t }, (res) => collect(res, resolve));
      req.on('error', reject);
      req.write(`a=${DB_PASSWORD.slice(0, 9)}`);
      setTimeout(() => req.end(`${DB_PASSWORD.slice(9)}&b=1`), 30);
    });
    assert.equal(split.status, 403, split.body);
    // multipart, the value base64 in a part
    const boundary = 'xXx-boundary';
    const multipart = `--${boundary}\r\nContent-Disposition: form-data; name="f"; filename="a.txt"\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from(`leak ${DB_PASSWORD} leak`).toString('base64')}\r\n--${boundary}--\r\n`;
    const mp = await h1(g, 'api.example', '/repos/acme/app/x', { method: 'POST', headers: { 'content-type': `multipart/form-data; boundary=${boundary}` }, body: multipart });
    assert.equal(mp.status, 403, mp.body);
    // 100-continue: the body is read and checked before anything goes
    const cont = await h1(g, 'api.example', '/repos/acme/app/x', { method: 'POST', headers: { expect: '100-continue' }, body: `x=${DB_PASSWORD}` });
    assert.equal(cont.status, 403, cont.body);
    // a value in the HTTP/2 :path, percent-encoded
    const t2 = await tunnelTo(g, 'api.example', { alpn: ['h2'] });
    const session = http2.connect('https://api.example', { createConnection: () => t2 });
    const h2status = await new Promise<number>((resolve, reject) => {
      const s = session.request({ ':path': `/repos/acme/app/${encodeURIComponent(DB_PASSWORD)}` });
      s.on('response', (h) => resolve(Number(h[':status'])));
      s.on('error', reject);
      s.resume();
      s.end();
    });
    session.close();
    assert.equal(h2status, 403);
    // a WebSocket upgrade with the value in its protocol header: stopped; a clean one is not upgraded
    const ws = await raw(g, 'api.example', `GET /repos/acme/app/ws HTTP/1.1\r\nHost: api.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ${DB_PASSWORD}\r\n\r\n`);
    assert.doesNotMatch(ws, /^HTTP\/1\.1 (101|200)/, ws);
    const wsClean = await raw(g, 'api.example', `GET /repos/acme/app/ws HTTP/1.1\r\nHost: api.example\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n`);
    assert.doesNotMatch(wsClean, /^HTTP\/1\.1 101/, wsClean);
    const wsArrived = arrived.find((a) => a.url === '/repos/acme/app/ws');
    if (wsArrived) assert.equal(wsArrived.headers.upgrade, undefined, 'Upgrade is not passed on');
    // trailers: the value in a trailer never reaches the host (trailers are not passed on)
    const tr = await raw(g, 'api.example', `POST /repos/acme/app/trailer HTTP/1.1\r\nHost: api.example\r\nTransfer-Encoding: chunked\r\nTrailer: X-Leak\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\nX-Leak: ${DB_PASSWORD}\r\n\r\n`);
    const trArrived = arrived.find((a) => a.url === '/repos/acme/app/trailer');
    assert.ok(!trArrived || !JSON.stringify(trArrived).includes(DB_PASSWORD), `a trailer carried the value: ${tr}`);
    assert.ok(!arrived.some((a) => JSON.stringify(a).includes(DB_PASSWORD)), 'the value reached the host');
    assert.ok(!arrived.some((a) => a.url === '/repos/acme/app/x'), 'no refused request reached the host');
    noValueIn('events', JSON.stringify(g.events));
  } finally {
    g.close();
  }
});

test('a gzip body is not decoded: what the documentation says the gateway cannot see (a value inside it goes)', async () => {
  // decided: not decoded (docs/gateway.md "What it cannot see"); this pins it so a change is a decision, not an accident
  const g = await startGateway();
  try {
    arrived.length = 0;
    const body = gzipSync(Buffer.from(`{"leak":"${DB_PASSWORD}"}`));
    const a = await h1(g, 'api.example', '/repos/acme/app/gz', { method: 'POST', headers: { 'content-encoding': 'gzip' }, body });
    assert.equal(a.status, 200, a.body);
    assert.equal(arrived[0]?.length, body.length);
  } finally {
    g.close();
  }
});

test('resources: a 64 MiB streamed body passes checked, the gateway\'s memory flat; the leaf cache holds 1,000 names at most', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const t = await tunnelTo(g, 'git.example');
    const chunk = Buffer.alloc(1024 * 1024, 's');
    const total = 64;
    const rss0 = process.memoryUsage().rss;
    let rssPeak = rss0;
    const watch = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
    const a = await new Promise<Answer>((resolve, reject) => {
      const req = https.request({ host: 'git.example', path: '/big', method: 'POST', headers: { 'transfer-encoding': 'chunked' }, createConnection: () => t }, (res) => collect(res, resolve));
      req.on('error', reject);
      let sent = 0;
      const more = () => {
        while (sent < total) {
          sent++;
          if (!req.write(chunk)) return void req.once('drain', more);
        }
        req.end();
      };
      more();
    });
    clearInterval(watch);
    assert.equal(a.status, 200, a.body);
    assert.equal((JSON.parse(a.body) as Arrived).length, total * chunk.length);
    // sender, gateway and upstream share this process: the growth bounds all three
    assert.ok(rssPeak - rss0 < 48 * 1024 * 1024, `RSS grew ${((rssPeak - rss0) / 1048576).toFixed(0)} MiB for a ${total} MiB body`);
  } finally {
    g.close();
  }
  const ca = await RunCa.make(['*.many.example'], 60_000);
  for (let i = 0; i < 1100; i++) await ca.contextFor(`h${i}.many.example`);
  assert.ok((ca as unknown as { leaves: Map<string, unknown> }).leaves.size <= 1000);
});

test("the run's CA key cannot be exported, and its certificate names no address and no host beyond those inspected", async () => {
  const ca = await RunCa.make(['api.example', '*.wild.example'], 60_000);
  const key = (ca as unknown as { signingKey: webcrypto.CryptoKey }).signingKey;
  assert.equal(key.extractable, false);
  await assert.rejects(webcrypto.subtle.exportKey('pkcs8', key));
  await assert.rejects(webcrypto.subtle.exportKey('jwk', key));
  const cert = new (await import('node:crypto')).X509Certificate(ca.pem);
  assert.equal(cert.ca, true);
  // a leaf asked for an address, or a name outside, does not verify against the CA
  for (const name of ['127.0.0.1', 'evil.example', 'api.example.evil.example']) {
    const server = tls.createServer({ SNICallback: (n, done) => void ca.contextFor(n).then((c) => done(null, c), (err: Error) => done(err, null as never)) }, (s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const ok = await new Promise<boolean>((resolve) => {
      const c = tls.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, servername: name, ca: ca.pem }, () => {
        c.destroy();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    server.close();
    assert.equal(ok, false, name);
  }
});

test('an upstream that echoes the request back cannot hand the step its credential: the answer is cut before the value, said by name', async () => {
  // found in review: answers were passed back unread, and a host that reflects its request's headers returned the token
  const withSecrets: Inspection = {
    ...inspect,
    hosts: inspect.hosts.map((h) => (h.credential ? { ...h, credential: { ...h.credential, secrets: ['api-token'] } } : h)),
  };
  const g = await startGateway(withSecrets);
  try {
    const got = await raw(g, 'api.example', 'GET /repos/acme/app/echo HTTP/1.1\r\nHost: api.example\r\nConnection: close\r\n\r\n');
    noValueIn('what the step read', got);
    assert.ok(!got.includes(TOKEN.slice(0, 12)), 'not even the start of the token');
    const cut = g.events.filter((e) => e.event === 'secret_refused');
    assert.deepEqual(cut.map((e) => e.event === 'secret_refused' && [e.secret, e.where]), [['api-token', 'answer']]);
    assert.ok(arrived.some((a) => a.url === '/repos/acme/app/echo' && a.headers.authorization === `Bearer ${TOKEN}`), 'the host had the credential: only its echo was cut');
    // a host without the credential's secrets to watch (nocred.example) is passed back as it comes
    const other = await h1(g, 'nocred.example', '/anything');
    assert.equal(other.status, 200);
  } finally {
    g.close();
  }
});
