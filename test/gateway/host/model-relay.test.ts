/** The relay to a model on this machine, on loopback: what it passes, whom it serves, and how a model that does not answer is said. */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { noAnswer, openModelRelay, pathAtModel, probeModel, whyNoAnswer } from '../../../src/gateway/host/model-relay.js';
import { hostModel } from '../../../src/plan/host-model.js';

const closers: Array<() => Promise<unknown>> = [];
after(() => Promise.all(closers.map((c) => c())));

/** A model on 127.0.0.1 that answers with what it was asked (a streamed answer in two parts). */
async function model(): Promise<{ port: number; seen: Array<{ url: string; host: string | undefined; body: string }> }> {
  const seen: Array<{ url: string; host: string | undefined; body: string }> = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ url: req.url ?? '', host: req.headers.host, body });
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('data: one\n\n');
      setTimeout(() => res.end('data: two\n\n'), 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => (server.closeAllConnections(), server.close(r))));
  return { port: (server.address() as AddressInfo).port, seen };
}

/** A port nothing listens on. */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

function post(url: string, body: string, localAddress?: string): Promise<{ status: number; text: string } | 'destroyed'> {
  return new Promise((resolve) => {
    const req = http.request(url, { method: 'POST', headers: { 'content-type': 'application/json' }, ...(localAddress ? { localAddress } : {}) }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', () => resolve('destroyed'));
    req.end(body);
  });
}

test('a path at the model is the one asked without the secret; one without it is nothing', () => {
  assert.equal(pathAtModel('s3cr3t', '/s3cr3t/v1/messages'), '/v1/messages');
  assert.equal(pathAtModel('s3cr3t', '/s3cr3t/api/v1/chat/completions?x=1'), '/api/v1/chat/completions?x=1');
  assert.equal(pathAtModel('s3cr3t', '/s3cr3t?x=1'), '/?x=1');
  assert.equal(pathAtModel('s3cr3t', '/s3cr3t'), '/');
  assert.equal(pathAtModel('s3cr3t', '/v1/messages'), undefined);
  assert.equal(pathAtModel('s3cr3t', '/s3cr3tx/v1/messages'), undefined);
  assert.equal(pathAtModel('s3cr3t', '/other/s3cr3t/v1'), undefined);
});

test("why a model does not answer, in words, with its address", () => {
  assert.equal(whyNoAnswer({ code: 'ECONNREFUSED' }), 'connection refused');
  assert.equal(whyNoAnswer({ code: 'timeout' }), 'no answer within 5 s');
  assert.equal(whyNoAnswer(new Error('odd')), 'odd');
  assert.equal(noAnswer({ shown: 'http://127.0.0.1:11434' }, 'connection refused'), 'the model at http://127.0.0.1:11434 does not answer (connection refused)');
});

test('the probe: a model that listens answers; a closed port is connection refused', async () => {
  const m = await model();
  assert.equal(await probeModel({ host: '127.0.0.1', port: m.port }), undefined);
  assert.equal(await probeModel({ host: '127.0.0.1', port: await closedPort() }), 'connection refused');
});

test("the relay passes the admitted address's calls with the secret to the model, streamed, with the model's Host; nothing else", async () => {
  const m = await model();
  const relay = await openModelRelay({ bind: '127.0.0.1', model: hostModel(`http://127.0.0.1:${m.port}/api/v1`)!, onProblem: () => undefined, onDown: () => undefined });
  closers.push(() => relay.close());
  assert.match(relay.upstream, new RegExp(`^http://127\\.0\\.0\\.1:${relay.port}/[A-Za-z0-9_-]{32}/api/v1$`));
  relay.admit('127.0.0.1');
  const ok = await post(`${relay.upstream}/chat/completions`, '{"model":"m"}');
  assert.deepEqual(ok, { status: 200, text: 'data: one\n\ndata: two\n\n' });
  assert.deepEqual(m.seen, [{ url: '/api/v1/chat/completions', host: `127.0.0.1:${m.port}`, body: '{"model":"m"}' }]);
  // without the secret: no answer at all, and the model asked nothing
  assert.equal(await post(`http://127.0.0.1:${relay.port}/api/v1/chat/completions`, '{}'), 'destroyed');
  assert.equal(m.seen.length, 1);
});

test('the relay serves no address but the one admitted, even with the secret', async () => {
  const m = await model();
  const relay = await openModelRelay({ bind: '127.0.0.1', model: hostModel(`http://127.0.0.1:${m.port}`)!, onProblem: () => undefined, onDown: () => undefined });
  closers.push(() => relay.close());
  relay.admit('127.0.0.2');
  assert.equal(await post(`${relay.upstream}/v1/messages`, '{}', '127.0.0.1'), 'destroyed');
  assert.equal(m.seen.length, 0);
});

test('a model that stopped answering: a 502 naming its address, said once to the step', async () => {
  const port = await closedPort();
  const problems: string[] = [];
  const relay = await openModelRelay({ bind: '127.0.0.1', model: hostModel(`http://127.0.0.1:${port}`)!, onProblem: (p) => problems.push(p), onDown: () => undefined });
  closers.push(() => relay.close());
  relay.admit('127.0.0.1');
  for (let i = 0; i < 2; i++) {
    const r = await post(`${relay.upstream}/v1/messages`, '{}');
    assert.notEqual(r, 'destroyed');
    if (r === 'destroyed') return;
    assert.equal(r.status, 502);
    assert.match(JSON.parse(r.text).error.message, new RegExp(`the model at http://127\\.0\\.0\\.1:${port} does not answer \\(connection refused\\)`));
  }
  assert.deepEqual(problems, [`the model at http://127.0.0.1:${port} does not answer (connection refused)`]);
  assert.deepEqual(relay.problems(), problems);
});

test('a relay that cannot listen where it is asked says so (an address not of this machine)', async () => {
  await assert.rejects(
    openModelRelay({ bind: '192.0.2.1', model: hostModel('http://127.0.0.1:1')!, onProblem: () => undefined, onDown: () => undefined }),
    (err: NodeJS.ErrnoException) => err.code === 'EADDRNOTAVAIL',
  );
});

test('a model that refused every call for the while it is given: the step is told to stop, once', async () => {
  const port = await closedPort();
  const down: string[] = [];
  const relay = await openModelRelay({ bind: '127.0.0.1', model: hostModel(`http://127.0.0.1:${port}`)!, onProblem: () => undefined, onDown: (m) => down.push(m), downMs: 100 });
  closers.push(() => relay.close());
  relay.admit('127.0.0.1');
  await post(`${relay.upstream}/v1/messages`, '{}');
  assert.deepEqual(down, []);
  await new Promise((r) => setTimeout(r, 150));
  await post(`${relay.upstream}/v1/messages`, '{}');
  await post(`${relay.upstream}/v1/messages`, '{}');
  assert.equal(down.length, 1);
  assert.match(down[0]!, new RegExp(`^the model at http://127\\.0\\.0\\.1:${port} does not answer \\(connection refused\\) for \\d+ s$`));
});

test('the gateway hanging up before the model answers (a call abandoned) is no problem of the model', async () => {
  const slow = http.createServer(() => undefined);
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => (slow.closeAllConnections(), slow.close(r))));
  const problems: string[] = [];
  const relay = await openModelRelay({ bind: '127.0.0.1', model: hostModel(`http://127.0.0.1:${(slow.address() as AddressInfo).port}`)!, onProblem: (p) => problems.push(p), onDown: () => undefined });
  closers.push(() => relay.close());
  relay.admit('127.0.0.1');
  const req = http.request(`${relay.upstream}/v1/messages`, { method: 'POST' });
  req.on('error', () => undefined);
  req.end('{}');
  await new Promise((r) => setTimeout(r, 100));
  req.destroy();
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(problems, []);
});
