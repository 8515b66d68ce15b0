/**
 * The gateway behind a company's proxy: what it reads of a proxy URL and
 * NO_PROXY, and, with a real proxy on loopback, that only what the step's
 * egress allows is asked of the proxy (CONNECT host:port, absolute-form
 * HTTP, with the proxy's credentials), that a name leading where a step may
 * not go is refused before the proxy hears of it, and that a model call
 * reaches an API behind a TLS-inspecting proxy whose root only the runner's
 * CA bundle holds.
 */
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import tls from 'node:tls';
import { after, before, test } from 'node:test';
import type { GatewayEvent } from '../../src/gateway/config.js';
import { beforeProxyProblem, Refusals, type Egress } from '../../src/gateway/egress.js';
import { Ledger } from '../../src/gateway/ledger.js';
import { ModelCalls } from '../../src/gateway/model-calls.js';
import { withRoots } from '../../src/gateway/outgoing.js';
import { DEFAULT_PRICES } from '../../src/gateway/prices.js';
import { gatewayServer } from '../../src/gateway/server.js';
import { bypassesProxy, connectThrough, parseNoProxy, parseProxyUrl, shownProxy, type UpstreamProxy } from '../../src/gateway/upstream-proxy.js';
import { startConnectProxy, type TestProxy } from '../fixtures/connect-proxy.js';
import { makeTestCa, type TestCa } from '../fixtures/test-ca.js';

test('a proxy URL: host, port, credentials as a Basic header; https and paths refused with what to write', () => {
  const p = parseProxyUrl('http://me:s%40cret@proxy.corp.example:8080', 'localhost, .corp.example');
  assert.equal(typeof p, 'object');
  const u = p as UpstreamProxy;
  assert.equal(u.host, 'proxy.corp.example');
  assert.equal(u.port, 8080);
  assert.equal(u.authorization, `Basic ${Buffer.from('me:s@cret').toString('base64')}`);
  assert.deepEqual(u.noProxy, ['localhost', '.corp.example']);
  assert.equal((parseProxyUrl('proxy.example:3128', undefined) as UpstreamProxy).port, 3128);
  assert.equal((parseProxyUrl('http://proxy.example', undefined) as UpstreamProxy).port, 80);
  assert.match(parseProxyUrl('https://proxy.example:3129', undefined) as string, /https:\/\/ proxies are not supported.*http:\/\/proxy\.example:3128/);
  assert.match(parseProxyUrl('http://proxy.example:3128/pac', undefined) as string, /has a path/);
  assert.doesNotMatch(parseProxyUrl('https://me:topsecret@proxy.example', undefined) as string, /topsecret/);
});

/** [what is given, how it is shown, the parts of it that must never be shown] */
const SHOWN: Array<[string, string | RegExp, string[]]> = [
  ['http://proxy.corp.example:3128', 'http://proxy.corp.example:3128', []],
  ['http://me:topsecret@proxy.corp.example:3128', 'http://me:***@proxy.corp.example:3128', ['topsecret']],
  ['http://:topsecret@proxy.corp.example:3128', 'http://:***@proxy.corp.example:3128', ['topsecret']],
  ['http://me@proxy.corp.example:3128', 'http://me@proxy.corp.example:3128', []],
  // an @ in the password: the last @ ends it (WHATWG), the whole password is hidden, not only its head
  ['http://me:Secr3tHead@Secr3tTailB@proxy.corp.example:3128', 'http://me:***@proxy.corp.example:3128', ['Secr3tHead', 'Secr3tTailB']],
  ['http://me:pa:ss@proxy.corp.example:3128', 'http://me:***@proxy.corp.example:3128', ['pa:ss', ':ss']],
  ['http://me:p%2Fa%40s%3As@proxy.corp.example:3128', 'http://me:***@proxy.corp.example:3128', ['p%2F', '%40s', 'a%40']],
  ['me:topsecret@proxy.corp.example:3128', 'http://me:***@proxy.corp.example:3128', ['topsecret']],
  ['http://me:topsecret@[::1]:3128', 'http://me:***@[::1]:3128', ['topsecret']],
  ['http://proxy.corp.example:3128/pac?x=1', 'http://proxy.corp.example:3128/…', ['pac', 'x=1']],
  // a / in the password: no URL at all, or one whose "port" is the password's head and whose path its tail
  ['http://me:Secr3t/Tail@127.0.0.1:3128', /^its value \(not shown: it is not a URL/, ['Secr3t', 'Tail', '127.0.0.1']],
  ['http://me:1234/Secr3tTail@127.0.0.1:3128', /^its value \(not shown: a password holding a \/ # or \?/, ['1234', 'Secr3tTail']],
  ['http://me:1234#Secr3tTail@proxy:3128', /^its value \(not shown/, ['1234', 'Secr3tTail']],
  ['http://me:1234?Secr3tTail@proxy:3128', /^its value \(not shown/, ['1234', 'Secr3tTail']],
  ['http://me:Secr3t@pro xy:3128', /^its value \(not shown: it is not a URL/, ['Secr3t', 'pro xy']],
  ['http://[me:Secr3t@proxy', 'http://%5Bme:***@proxy', ['Secr3t']],
];

for (const [given, shown, hidden] of SHOWN) {
  test(`a proxy URL in a message: ${given} is shown as ${shown}`, () => {
    const got = shownProxy(given);
    if (typeof shown === 'string') assert.equal(got, shown);
    else assert.match(got, shown);
    const parsed = parseProxyUrl(given, undefined);
    for (const h of hidden) {
      assert.ok(!got.includes(h), `${JSON.stringify(got)} shows ${h}`);
      if (typeof parsed === 'string') assert.ok(!parsed.includes(h), `${JSON.stringify(parsed)} shows ${h}`);
    }
  });
}

test('NO_PROXY: names, suffixes with or without a dot, *, ports', () => {
  const no = parseNoProxy('localhost,.internal.example, mirror.example:8080 corp.example');
  assert.equal(bypassesProxy(no, 'localhost', 443), true);
  assert.equal(bypassesProxy(no, 'a.internal.example', 443), true);
  assert.equal(bypassesProxy(no, 'internal.example', 443), true);
  assert.equal(bypassesProxy(no, 'notinternal.example', 443), false);
  assert.equal(bypassesProxy(no, 'mirror.example', 8080), true);
  assert.equal(bypassesProxy(no, 'mirror.example', 443), false);
  assert.equal(bypassesProxy(no, 'npm.corp.example', 443), true);
  assert.equal(bypassesProxy(no, 'registry.npmjs.org', 443), false);
  assert.equal(bypassesProxy(parseNoProxy('*'), 'anything.example', 80), true);
  assert.equal(bypassesProxy([], 'anything.example', 80), false);
});

let ca: TestCa;
/** a TLS server standing for a site behind the proxy: answers "hello from <servername>" over HTTPS */
let site: https.Server;
let sitePort: number;
/** a plain HTTP server standing for a site behind the proxy */
let plain: http.Server;
let plainPort: number;
let proxy: TestProxy;

before(async () => {
  ca = makeTestCa(['model.example', 'allowed.example']);
  site = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
    let body = '';
    req.on('data', (b) => (body += b));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: 'x', type: 'message', model: 'claude-sonnet-4-5', content: [], usage: { input_tokens: 3, output_tokens: 2 }, host: req.headers.host, got: body.length }));
    });
  });
  await new Promise<void>((r) => site.listen(0, '127.0.0.1', r));
  sitePort = (site.address() as net.AddressInfo).port;
  plain = http.createServer((req, res) => res.end(`plain ${req.headers.host} ${req.url} via=${req.headers['x-via-test-proxy'] ?? 'none'}`));
  await new Promise<void>((r) => plain.listen(0, '127.0.0.1', r));
  plainPort = (plain.address() as net.AddressInfo).port;
  // the proxy knows where the names lead; nothing here resolves them
  proxy = await startConnectProxy((host, port) => (port === 443 ? { host: '127.0.0.1', port: sitePort } : port === 80 ? { host: '127.0.0.1', port: plainPort } : undefined), (host) => host === 'blocked.example');
});
after(async () => {
  await proxy?.close();
  site?.closeAllConnections();
  site?.close();
  plain?.closeAllConnections();
  plain?.close();
  ca?.close();
});

const upstream = (): UpstreamProxy => ({ host: '127.0.0.1', port: proxy.port, authorization: 'Basic dGVzdDp0ZXN0', noProxy: [] });

test('connectThrough: a tunnel once the proxy says 200; its refusal, with its status line, otherwise', async () => {
  const s = await connectThrough(upstream(), 'allowed.example', 443);
  const t = tls.connect({ socket: s, servername: 'allowed.example', ca: ca.caPem });
  await new Promise<void>((r, j) => t.once('secureConnect', r).once('error', j));
  t.destroy();
  await assert.rejects(connectThrough(upstream(), 'blocked.example', 443), /refused CONNECT blocked\.example:443 \(HTTP\/1\.1 403 Forbidden\)/);
  await assert.rejects(connectThrough({ host: '127.0.0.1', port: 1, noProxy: [] }, 'x.example', 443), /could not be reached/);
});

async function withGateway(allow: string[], fn: (port: number, events: GatewayEvent[]) => Promise<void>): Promise<void> {
  const events: GatewayEvent[] = [];
  const egress: Egress = { allow, refusals: new Refusals((host, reason) => events.push({ event: 'refused', host, reason })), policy: { hostAddresses: [], privateAllowed: [] }, proxy: upstream() };
  const server = gatewayServer({ allow, prices: {}, listenSubnet: '127.0.0.0/8' }, undefined, egress);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    await fn((server.address() as net.AddressInfo).port, events);
  } finally {
    server.closeAllConnections();
    server.close();
  }
}

/** CONNECT through the gateway, then TLS to `name`: what the site answered, or the gateway's status. */
function tunnelGet(gatewayPort: number, name: string): Promise<string> {
  return new Promise((resolve) => {
    const req = http.request({ host: '127.0.0.1', port: gatewayPort, method: 'CONNECT', path: `${name}:443` });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) return resolve(`status ${res.statusCode}`);
      const t = tls.connect({ socket, servername: name, ca: ca.caPem }, () => t.write(`GET / HTTP/1.1\r\nhost: ${name}\r\nconnection: close\r\n\r\n`));
      let got = '';
      t.on('data', (b) => (got += b));
      t.on('close', () => resolve(got));
      t.on('error', (e) => resolve(`error ${e.message}`));
    });
    req.on('response', (res) => resolve(`status ${res.statusCode}`));
    req.on('error', (e) => resolve(`error ${e.message}`));
    req.end();
  });
}

test('behind a proxy, the gateway asks it for allowed names only, with its credentials; the rest is refused as before', async () => {
  await withGateway(['allowed.example', 'localhost'], async (port, events) => {
    proxy.seen.length = 0;
    assert.match(await tunnelGet(port, 'allowed.example'), /"host":"allowed\.example"/);
    assert.equal(await tunnelGet(port, 'denied.example'), 'status 403');
    // localhost is allowed by name, but leads to loopback: refused before the proxy hears of it
    assert.equal(await tunnelGet(port, 'localhost'), 'status 403');
    const plainAnswer = await new Promise<string>((resolve) => {
      http.get({ host: '127.0.0.1', port, path: 'http://allowed.example/some/path?q=1' }, (res) => {
        let b = '';
        res.on('data', (c) => (b += c));
        res.on('end', () => resolve(b));
      });
    });
    assert.equal(plainAnswer, 'plain allowed.example /some/path?q=1 via=1');
    assert.deepEqual(
      proxy.seen.map((s) => `${s.method} ${s.target} ${s.auth}`),
      ['CONNECT allowed.example:443 Basic dGVzdDp0ZXN0', 'GET http://allowed.example/some/path?q=1 Basic dGVzdDp0ZXN0'],
    );
    const refused = events.filter((e) => e.event === 'refused').map((e) => (e as { host: string }).host);
    assert.deepEqual(refused.sort(), ['denied.example', 'localhost']);
  });
});

test("a model call reaches an API behind the proxy, trusting a root that only the runner's bundle holds", async () => {
  proxy.seen.length = 0;
  const call = async (pem: string | undefined) => {
    const events: GatewayEvent[] = [];
    const roots = withRoots(pem);
    const calls = new ModelCalls({ kind: 'anthropic', upstream: 'https://model.example' }, new Ledger(undefined), DEFAULT_PRICES, (e) => events.push(e), { count: 0 }, { ...(roots ? { ca: roots } : {}), proxy: upstream() });
    const server = gatewayServer({ allow: [], prices: {}, listenSubnet: '127.0.0.0/8' }, calls, { allow: [], refusals: new Refusals(() => undefined), policy: { hostAddresses: [], privateAllowed: [] } });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as net.AddressInfo).port;
      const res = await fetch(`http://127.0.0.1:${port}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] }) });
      return { status: res.status, body: await res.text(), events };
    } finally {
      server.closeAllConnections();
      server.close();
    }
  };
  const without = await call(undefined);
  assert.equal(without.status, 502, without.body);
  const withCa = await call(ca.caPem);
  assert.equal(withCa.status, 200, withCa.body);
  assert.match(withCa.body, /"host":"model\.example"/);
  const settled = withCa.events.find((e) => e.event === 'call') as { inputTokens: number; outputTokens: number } | undefined;
  assert.equal(settled?.inputTokens, 3);
  assert.ok(proxy.seen.every((s) => s.target === 'model.example:443'), JSON.stringify(proxy.seen));
});

test('behind a proxy, a name with a public and a private address is refused: the proxy, not the gateway, picks the address', () => {
  const policy = { hostAddresses: ['172.17.0.1'], privateAllowed: [] };
  // attack: an allowed name (the step's own domain) with two A records, one the company's 10.0.0.5; the proxy might connect there
  assert.match(beforeProxyProblem(['93.184.216.34', '10.0.0.5'], policy) ?? '', /^10\.0\.0\.5: a private or special-purpose address/);
  assert.match(beforeProxyProblem(['93.184.216.34', '172.17.0.1'], policy) ?? '', /172\.17\.0\.1: an address of this machine/);
  assert.equal(beforeProxyProblem(['93.184.216.34', '2606:4700::1'], policy), undefined);
  assert.equal(beforeProxyProblem(['10.0.0.5'], { ...policy, privateAllowed: ['10.0.0.0/8'] }), undefined);
});
