/**
 * Inspection, engine-free: the gateway's server on loopback, an HTTPS
 * upstream of the test's own on 127.0.0.1 (its certificate from a test CA,
 * given as the runner's CA bundle) reached through the test company proxy
 * (the address policy never lets a name lead to loopback: the proxy is what
 * carries the gateway there, as in upstream-proxy.test.ts). The upstream
 * records what arrived, so a refusal is seen to have sent nothing.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type net from 'node:net';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import type { GatewayEvent, Inspection } from '../../src/gateway/config.js';
import { parseConfig } from '../../src/gateway/config.js';
import { Refusals, type Egress } from '../../src/gateway/egress.js';
import { Inspector, originForm } from '../../src/gateway/inspected.js';
import { answerHeaders, outgoingHeaders } from '../../src/gateway/inspected-request.js';
import { withRoots } from '../../src/gateway/outgoing.js';
import { constraintNames, RunCa } from '../../src/gateway/run-ca.js';
import { ByteBudget } from '../../src/gateway/secret-scan.js';
import { gatewayServer } from '../../src/gateway/server.js';
import { startConnectProxy, type TestProxy } from '../fixtures/connect-proxy.js';
import { makeTestCa, type TestCa } from '../fixtures/test-ca.js';

const DB_PASSWORD = 'hunter2-Db-s3cret-value';
const TOKEN = 'ghp_credentialValue0123456789';
const GIT_TOKEN = 'git-token-0123456789abcdef';
const MAX_BODY = 256 * 1024;

interface Arrived {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  length: number;
  sha: string;
}

let testCa: TestCa;
let upstream: https.Server;
let plainUpstream: http.Server;
let proxy: TestProxy;
const arrived: Arrived[] = [];
/** the /stream answer's end waits for this */
let endStream: () => void = () => undefined;

const inspect: Inspection = {
  hosts: [
    {
      host: 'api.example',
      methods: ['GET', 'POST'],
      paths: ['/repos/acme/app/**', '/echo', '/stream', '/redirect', '/upload'],
      rule: '{ host: api.example, methods: [GET, POST], paths: [/repos/acme/app/**, …] }',
      credential: { name: 'github-api', headers: { Authorization: `Bearer ${TOKEN}` } },
    },
    { host: 'git.example', stream: true, credential: { name: 'github-git', headers: { Authorization: `Basic ${Buffer.from(`x-access-token:${GIT_TOKEN}`).toString('base64')}` } } },
    { host: 'wrong.example' },
    { host: 'plain.example', paths: ['/ok/**'], rule: '{ host: plain.example, paths: [/ok/**] }' },
  ],
  secrets: [
    { name: 'DB_PASSWORD', value: DB_PASSWORD },
    { name: 'github-api', value: TOKEN },
    { name: 'github-git', value: GIT_TOKEN },
  ],
  maxBodyBytes: MAX_BODY,
};

function record(req: http.IncomingMessage, done: (a: Arrived) => void): void {
  const hash = createHash('sha256');
  let length = 0;
  req.on('data', (b: Buffer) => {
    length += b.length;
    hash.update(b);
  });
  req.on('end', () => {
    const a = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, length, sha: hash.digest('hex') };
    arrived.push(a);
    done(a);
  });
}

before(async () => {
  testCa = makeTestCa(['api.example', 'git.example', 'tunnel.example']);
  upstream = https.createServer({ key: testCa.key, cert: testCa.cert }, (req, res) =>
    record(req, (a) => {
      if (a.url === '/stream') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.write('first part\n');
        endStream = () => res.end('last part\n');
        return;
      }
      if (a.url === '/redirect') return void res.writeHead(302, { location: 'https://elsewhere.example/x' }).end();
      res.writeHead(200, { 'content-type': 'application/json', connection: 'keep-alive' });
      res.end(JSON.stringify({ method: a.method, url: a.url, host: a.headers.host, auth: a.headers.authorization ?? null, length: a.length, sha: a.sha }));
    }),
  );
  // one process holds the step's client, the gateway, the proxy and this upstream: on a starved machine a kept-alive
  // connection can sit idle past Node's 5 s default while the gateway is about to reuse it, and the upstream's close
  // then fails a POST (not retried: not idempotent) — the machine's load, not the gateway, would decide the test
  upstream.keepAliveTimeout = 120_000;
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  plainUpstream = http.createServer((req, res) => record(req, (a) => res.end(JSON.stringify({ url: a.url, auth: a.headers.authorization ?? null, length: a.length }))));
  await new Promise<void>((r) => plainUpstream.listen(0, '127.0.0.1', r));
  const tlsPort = (upstream.address() as net.AddressInfo).port;
  const plainPort = (plainUpstream.address() as net.AddressInfo).port;
  proxy = await startConnectProxy((_host, port) => ({ host: '127.0.0.1', port: port === 80 ? plainPort : tlsPort }));
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
  inspector: Inspector;
  close(): void;
}

async function startGateway(i: Inspection = inspect, budget?: ByteBudget): Promise<Gateway> {
  const allow = ['api.example', 'git.example', 'wrong.example', 'tunnel.example', 'plain.example', 'open.example'];
  const events: GatewayEvent[] = [];
  const egress: Egress = { allow, refusals: new Refusals((host, reason) => events.push({ event: 'refused', host, reason })), policy: { hostAddresses: [], privateAllowed: [] }, proxy: { host: '127.0.0.1', port: proxy.port, noProxy: [] } };
  const runCa = await RunCa.make(i.hosts.map((h) => h.host), 3_600_000);
  const inspector = new Inspector(i, runCa, egress, withRoots(testCa.caPem), (e) => events.push(e), budget);
  egress.inspector = inspector;
  const server = gatewayServer({ allow, prices: {}, listenSubnet: '127.0.0.0/8' }, undefined, egress);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as net.AddressInfo).port,
    events,
    runCa,
    inspector,
    close: () => {
      inspector.close();
      server.closeAllConnections();
      server.close();
    },
  };
}

/** CONNECT host:443 through the gateway, then TLS trusting `ca` (the run's CA by default). */
async function tunnelTo(g: Gateway, host: string, alpn = ['http/1.1'], ca = g.runCa.pem): Promise<tls.TLSSocket> {
  const socket = await new Promise<net.Socket>((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: g.port, method: 'CONNECT', path: `${host}:443` });
    req.on('connect', (res, s: net.Socket) => (res.statusCode === 200 ? resolve(s) : reject(new Error(`CONNECT: ${res.statusCode}`))));
    req.on('error', reject);
    req.end();
  });
  return new Promise((resolve, reject) => {
    const t = tls.connect({ socket, servername: host, ca, ALPNProtocols: alpn }, () => resolve(t));
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

/** One HTTP/1.1 request in its own tunnel. */
async function h1(g: Gateway, host: string, path: string, o: { method?: string; headers?: http.OutgoingHttpHeaders; body?: Buffer | string } = {}): Promise<Answer> {
  const t = await tunnelTo(g, host);
  return new Promise((resolve, reject) => {
    const req = https.request({ host, path, method: o.method ?? 'GET', headers: o.headers, createConnection: () => t }, (res) => collect(res, resolve));
    req.on('error', reject);
    req.end(o.body);
  });
}

const json = (a: Answer) => JSON.parse(a.body) as { method: string; url: string; host: string; auth: string | null; length: number; sha: string };

test('the credential is set, replacing the Authorization the step sent; the Host is the one checked', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const a = await h1(g, 'api.example', '/repos/acme/app/issues?state=open', { headers: { authorization: 'Bearer the-steps-own', host: 'other.example' } });
    assert.equal(a.status, 200, a.body);
    assert.deepEqual({ ...json(a), sha: undefined }, { method: 'GET', url: '/repos/acme/app/issues?state=open', host: 'api.example', auth: `Bearer ${TOKEN}`, length: 0, sha: undefined });
    const basic = await h1(g, 'git.example', '/acme/app.git/info/refs?service=git-receive-pack', { headers: { authorization: 'Basic c3RlcDpzdGVw' } });
    assert.equal(json(basic).auth, `Basic ${Buffer.from(`x-access-token:${GIT_TOKEN}`).toString('base64')}`);
    // the step trusted the run's CA: the leaf is the gateway's, for that host only
    const t = await tunnelTo(g, 'api.example');
    assert.match(t.getPeerX509Certificate()?.subjectAltName ?? '', /DNS:api\.example/);
    t.destroy();
    // and only the run's CA: the host's own root does not make it verify (the gateway, not the host, answers)
    await assert.rejects(tunnelTo(g, 'api.example', ['http/1.1'], testCa.caPem), /self-signed|unable to verify|certificate/i);
  } finally {
    g.close();
  }
});

test('methods and paths: refused with one line and an egress_refused event each, judged after normalizing the path', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const del = await h1(g, 'api.example', '/repos/acme/app', { method: 'DELETE' });
    assert.equal(del.status, 403);
    assert.match(del.body, /DELETE/);
    assert.equal(del.body.trim().split('\n').length, 1);
    for (const path of ['/repos/acme/other', '/repos/acme/app/../other', '/repos/acme/app/%2e%2e/other', '/repos/acme/app/%2E%2E/%2e%2e/x', '/repos//acme/other']) {
      const a = await h1(g, 'api.example', path);
      assert.ok(a.status === 403 || a.status === 400, `${path}: ${a.status} ${a.body}`);
    }
    await h1(g, 'api.example', '/repos/acme/other');
    assert.deepEqual(arrived, [], 'nothing refused reached the host');
    const said = g.events.filter((e) => e.event === 'egress_refused');
    assert.ok(said.length >= 2, JSON.stringify(g.events));
    // every refusal is an event (the runner counts them, and says each rule once)
    assert.ok(said.filter((e) => e.event === 'egress_refused' && e.path === '/repos/acme/other').length >= 4, JSON.stringify(said));
    assert.ok(!g.events.some((e) => e.event === 'refused' && /rule/.test(e.reason)), 'not counted again as a refused host');
    const ok = await h1(g, 'api.example', '/repos/acme/app/./pulls');
    assert.equal(json(ok).url, '/repos/acme/app/pulls');
  } finally {
    g.close();
  }
});

test('a secret in the URL, a header or the body, in each form, is refused before the host sees anything', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const forms = [DB_PASSWORD, encodeURIComponent(DB_PASSWORD), Buffer.from(DB_PASSWORD).toString('base64'), Buffer.from(DB_PASSWORD).toString('hex')];
    for (const f of forms) {
      const inUrl = await h1(g, 'api.example', `/repos/acme/app/x?q=${encodeURIComponent(f)}`);
      assert.equal(inUrl.status, 403, `url ${f}`);
      assert.match(inUrl.body, /DB_PASSWORD/);
      assert.ok(!inUrl.body.includes(DB_PASSWORD));
      const inHeader = await h1(g, 'api.example', '/echo', { headers: { 'x-note': `see ${f}` } });
      assert.equal(inHeader.status, 403, `header ${f}`);
      const inBody = await h1(g, 'api.example', '/upload', { method: 'POST', body: `{"data":"${'x'.repeat(1000)}${f}"}` });
      assert.equal(inBody.status, 403, `body ${f}`);
      assert.match(inBody.body, /DB_PASSWORD/);
    }
    // a credential's own value, sent by a step that found it, is refused too
    assert.equal((await h1(g, 'git.example', '/x', { headers: { 'x-t': TOKEN } })).status, 403);
    assert.deepEqual(arrived, []);
    const events = g.events.filter((e) => e.event === 'secret_refused');
    assert.ok(events.some((e) => e.event === 'secret_refused' && e.where === 'url'));
    assert.ok(events.some((e) => e.event === 'secret_refused' && e.where === 'header'));
    assert.ok(events.some((e) => e.event === 'secret_refused' && e.where === 'body'));
    assert.ok(!JSON.stringify(g.events).includes(DB_PASSWORD));
  } finally {
    g.close();
  }
});

test('a body over the limit is refused (413, with the reason) unless its host streams; a streamed body is checked in a sliding window', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const big = Buffer.alloc(MAX_BODY + 1, 'a');
    const refused = await h1(g, 'api.example', '/upload', { method: 'POST', body: big });
    assert.equal(refused.status, 413);
    assert.match(refused.body, /stream: true/);
    assert.deepEqual(arrived, []);
    // stream: true, 3 x the limit, sent chunked: reaches the host whole
    const streamed = await h1(g, 'git.example', '/acme/app.git/git-receive-pack', { method: 'POST', headers: { 'transfer-encoding': 'chunked' }, body: Buffer.alloc(MAX_BODY * 3, 'b') });
    assert.equal(streamed.status, 200, streamed.body);
    assert.equal(json(streamed).length, MAX_BODY * 3);
    // the secret far past the limit, across a chunk boundary: the host's request is cut, the step told
    const t = await tunnelTo(g, 'git.example');
    const answer = await new Promise<Answer>((resolve, reject) => {
      const req = https.request({ host: 'git.example', path: '/push', method: 'POST', createConnection: () => t }, (res) => collect(res, resolve));
      req.on('error', reject);
      req.write(Buffer.alloc(MAX_BODY * 2, 'c'));
      req.write(DB_PASSWORD.slice(0, 7));
      setTimeout(() => req.end(`${DB_PASSWORD.slice(7)}${'d'.repeat(1000)}`), 50);
    }).catch((err: Error) => ({ status: 0, headers: {}, body: err.message }));
    assert.ok(answer.status === 403 || answer.status === 0, `${answer.status} ${answer.body}`);
    assert.ok(!(arrived as Arrived[]).some((a) => a.url === '/push'), 'the cut request did not arrive whole');
    assert.ok(g.events.some((e) => e.event === 'secret_refused' && e.where === 'body' && e.host === 'git.example'));
  } finally {
    g.close();
  }
});

test('HTTP/2 from the client, and HTTP/1.1: both read, answered, and refused alike', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const t = await tunnelTo(g, 'api.example', ['h2', 'http/1.1']);
    assert.equal(t.alpnProtocol, 'h2');
    const session = http2.connect('https://api.example', { createConnection: () => t });
    const ask = (path: string, method = 'GET', body?: string) =>
      new Promise<Answer>((resolve, reject) => {
        const s = session.request({ ':path': path, ':method': method, authorization: 'Bearer mine' });
        let text = '';
        let status = 0;
        s.on('response', (h) => (status = Number(h[':status'])));
        s.setEncoding('utf8');
        s.on('data', (c: string) => (text += c));
        s.on('end', () => resolve({ status, headers: {}, body: text }));
        s.on('error', reject);
        s.end(body);
      });
    const [a, b, c] = await Promise.all([ask('/repos/acme/app/1'), ask('/upload', 'POST', 'hello'), ask('/repos/acme/app', 'DELETE')]);
    assert.equal(json(a).auth, `Bearer ${TOKEN}`);
    assert.equal(json(b).length, 5);
    assert.equal(c.status, 403);
    assert.equal((await ask(`/echo?x=${DB_PASSWORD}`)).status, 403);
    session.close();
  } finally {
    g.close();
  }
});

test('a streamed answer arrives before it ends; a redirect is passed back, not followed', async () => {
  const g = await startGateway();
  try {
    const t = await tunnelTo(g, 'api.example');
    const first = await new Promise<{ text: string; res: http.IncomingMessage }>((resolve, reject) => {
      const req = https.request({ host: 'api.example', path: '/stream', createConnection: () => t }, (res) => {
        res.setEncoding('utf8');
        res.once('data', (c: string) => resolve({ text: c, res }));
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(first.text, 'first part\n');
    const rest = new Promise<string>((r) => {
      let s = '';
      first.res.on('data', (c: string) => (s += c));
      first.res.on('end', () => r(s));
    });
    endStream();
    assert.equal(await rest, 'last part\n');
    arrived.length = 0;
    const redirect = await h1(g, 'api.example', '/redirect');
    assert.equal(redirect.status, 302);
    assert.equal(redirect.headers.location, 'https://elsewhere.example/x');
    assert.deepEqual(
      arrived.map((a) => a.url),
      ['/redirect'],
    );
  } finally {
    g.close();
  }
});

test('a host without a rule is still a plain tunnel (the host\'s own certificate); one whose certificate does not verify is refused, saying so', async () => {
  const g = await startGateway();
  try {
    const t = await tunnelTo(g, 'tunnel.example', ['http/1.1'], testCa.caPem);
    assert.match(t.getPeerX509Certificate()?.issuer ?? '', /runner test company CA/);
    t.destroy();
    // wrong.example is inspected, and the upstream's certificate names other hosts: nothing is sent
    arrived.length = 0;
    const bad = await h1(g, 'wrong.example', '/x', { headers: { 'x-data': 'payload' } });
    assert.equal(bad.status, 502);
    assert.match(bad.body, /certificate of wrong\.example did not verify/);
    assert.deepEqual(arrived, []);
  } finally {
    g.close();
  }
});

test('plain HTTP: the same rules, secret checks and credentials', async () => {
  const g = await startGateway();
  try {
    arrived.length = 0;
    const get = (path: string, headers: http.OutgoingHttpHeaders = {}) =>
      new Promise<Answer>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: g.port, path: `http://plain.example${path}`, headers }, (res) => collect(res, resolve));
        req.on('error', reject);
        req.end();
      });
    assert.equal((await get('/ok/a')).status, 200);
    assert.equal((await get('/ok/../no')).status, 403);
    assert.equal((await get('/ok/a', { 'x-p': DB_PASSWORD })).status, 403);
    // a host without a rule still gets the secret checks
    const open = await new Promise<Answer>((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port: g.port, path: `http://open.example/?p=${Buffer.from(DB_PASSWORD).toString('base64')}` }, (res) => collect(res, resolve));
      req.on('error', reject);
      req.end();
    });
    assert.equal(open.status, 403);
    assert.deepEqual(
      arrived.map((a) => a.url),
      ['/ok/a'],
    );
  } finally {
    g.close();
  }
});

test('100 parallel uploads: the bytes held never pass the budget, and all arrive', async () => {
  const budgetBytes = 4 * 1024 * 1024;
  const budget = new ByteBudget(budgetBytes);
  let peak = 0;
  const take = budget.take.bind(budget);
  budget.take = async (n: number) => {
    await take(n);
    peak = Math.max(peak, budget.inUse);
  };
  const g = await startGateway(inspect, budget);
  try {
    arrived.length = 0;
    const body = Buffer.alloc(MAX_BODY, 'u');
    const rss0 = process.memoryUsage().rss;
    let rssPeak = rss0;
    const watch = setInterval(() => (rssPeak = Math.max(rssPeak, process.memoryUsage().rss)), 20);
    const answers = await Promise.all(Array.from({ length: 100 }, () => h1(g, 'api.example', '/upload', { method: 'POST', body })));
    clearInterval(watch);
    const wrong = answers.filter((a) => a.status !== 200 || json(a).length !== MAX_BODY);
    assert.deepEqual(wrong.map((a) => `${a.status} ${a.body.slice(0, 300)}`), [], 'every upload arrives whole');
    assert.ok(peak <= budgetBytes, `peak held ${peak}`);
    assert.ok(peak >= MAX_BODY, 'the budget was used');
    assert.equal(budget.inUse, 0, 'every reservation given back');
    console.log(`100 uploads of ${MAX_BODY} bytes: held at most ${(peak / 1048576).toFixed(2)} MiB of a ${budgetBytes / 1048576} MiB budget; this process's RSS ${(rss0 / 1048576).toFixed(0)} -> peak ${(rssPeak / 1048576).toFixed(0)} MiB, heap ${(process.memoryUsage().heapUsed / 1048576).toFixed(0)} MiB`);
  } finally {
    g.close();
  }
});

test('the pure parts: headers out and back, the absolute form, the CA\'s names, the config', () => {
  const { headers, stepHeaders } = outgoingHeaders({ authorization: 'Bearer x', connection: 'keep-alive, x-hop', 'x-hop': '1', 'x-keep': '2', host: 'evil', ':path': '/' }, { name: 'c', headers: { 'X-Api-Key': 'k' } }, 'api.example');
  assert.deepEqual(headers, { 'x-keep': '2', host: 'api.example', 'x-api-key': 'k' });
  assert.deepEqual(stepHeaders, [['x-keep', '2']]);
  assert.deepEqual(answerHeaders({ 'transfer-encoding': 'chunked', connection: 'close', 'content-type': 'a' }), { 'content-type': 'a' });
  assert.equal(originForm('http://h.example:8080/a/../b?q'), '/a/../b?q');
  assert.equal(originForm('http://h.example?q=1'), '/?q=1');
  assert.equal(originForm('http://h.example'), '/');
  assert.deepEqual(constraintNames(['*.github.com', 'API.github.com', 'git.example:8443']), ['api.github.com', 'git.example', 'github.com']);
  assert.deepEqual(constraintNames([]), ['invalid']);
  const base = { allow: [], prices: {}, listenSubnet: '10.0.0.0/24' };
  assert.equal(typeof parseConfig(JSON.stringify({ ...base, inspect })), 'object');
  assert.match(parseConfig(JSON.stringify({ ...base, inspect: { ...inspect, maxBodyBytes: 0 } })) as string, /maxBodyBytes/);
  assert.match(parseConfig(JSON.stringify({ ...base, inspect: { ...inspect, hosts: [{ host: 'a.example', methods: ['get'] }] } })) as string, /upper-case/);
  assert.match(parseConfig(JSON.stringify({ ...base, inspect: { ...inspect, hosts: [{ host: 'a.example', credential: { name: 'c', headers: { A: 'x\r\nB: y' } } }] } })) as string, /one-line/);
});

test("the run's CA signs for its hosts only: a leaf for another name does not verify (name constraints)", async () => {
  const ca = await RunCa.make(['api.example'], 60_000);
  // verified for real by a TLS handshake against the CA
  for (const [name, want] of [['api.example', true], ['evil.example', false]] as const) {
    const server = tls.createServer({ SNICallback: (n, done) => void ca.contextFor(n).then((c) => done(null, c)) }, (s) => s.end());
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const got = await new Promise<boolean>((resolve) => {
      const c = tls.connect({ host: '127.0.0.1', port: (server.address() as net.AddressInfo).port, servername: name, ca: ca.pem }, () => {
        c.destroy();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    server.close();
    assert.equal(got, want, name);
  }
});
