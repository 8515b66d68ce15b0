/**
 * The relay a swarm step with network: none reaches the runner through: one
 * port joined to one address, for its own network's addresses only.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { test } from 'node:test';
import { MAX_RELAYED, startRelay } from '../../src/gateway/relay.js';

function listen(server: net.Server): Promise<number> {
  return new Promise((r) => server.listen(0, '127.0.0.1', () => r((server.address() as net.AddressInfo).port)));
}

function ask(port: number, line: string): Promise<string> {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1', () => s.end(line));
    let got = '';
    s.on('data', (b) => (got += b.toString()));
    s.on('close', () => resolve(got));
    s.on('error', () => resolve(got));
  });
}

test('a relay joins each connection to its one target, both ways', async () => {
  const target = net.createServer((s) => s.on('data', (b) => s.end(`echo ${b.toString()}`)));
  const to = await listen(target);
  const errors: string[] = [];
  const relay = await startRelay('127.0.0.1', 0, '127.0.0.0/8', { host: '127.0.0.1', port: to }, (m) => errors.push(m));
  const port = (relay.address() as net.AddressInfo).port;
  try {
    assert.equal(await ask(port, 'hello'), 'echo hello');
    assert.deepEqual(errors, []);
  } finally {
    relay.close();
    target.close();
  }
});

test('a relay drops connections from outside its network, and says when its target is not there', async () => {
  const target = net.createServer((s) => s.end('should not be reached'));
  const to = await listen(target);
  let reached = 0;
  target.on('connection', () => reached++);
  const errors: string[] = [];
  const outside = await startRelay('127.0.0.1', 0, '10.9.8.0/24', { host: '127.0.0.1', port: to }, (m) => errors.push(m));
  try {
    assert.equal(await ask((outside.address() as net.AddressInfo).port, 'x'), '');
    assert.equal(reached, 0, 'nothing from outside its subnet is relayed');
  } finally {
    outside.close();
    target.close();
  }
  const gone = await startRelay('127.0.0.1', 0, '127.0.0.0/8', { host: '127.0.0.1', port: to }, (m) => errors.push(m));
  try {
    assert.equal(await ask((gone.address() as net.AddressInfo).port, 'x'), '');
    assert.match(errors.join('\n'), new RegExp(`relay to 127.0.0.1:${to}: .*ECONNREFUSED`));
  } finally {
    gone.close();
  }
});

test('a relay holds at most MAX_RELAYED connections at once: a step that opens thousands holds no more of the runner\'s sockets', async () => {
  let held = 0;
  const inside: net.Socket[] = [];
  const target = net.createServer((s) => {
    held++;
    inside.push(s);
    s.on('data', (b) => b.toString() === 'again' && s.end('ok'));
  });
  const to = await listen(target);
  const errors: string[] = [];
  const relay = await startRelay('127.0.0.1', 0, '127.0.0.0/8', { host: '127.0.0.1', port: to }, (m) => errors.push(m));
  const port = (relay.address() as net.AddressInfo).port;
  const sockets: net.Socket[] = [];
  try {
    for (let i = 0; i < 50; i++) {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => undefined);
      s.write('GET ');
      sockets.push(s);
    }
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(held, MAX_RELAYED, 'the target saw only the first ones');
    assert.equal(errors.filter((e) => /more than \d+ connections/.test(e)).length, 1, 'said once');
    // one that ends frees its place for the next
    sockets[0]!.destroy();
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await ask(port, 'again').then(() => held), MAX_RELAYED + 1);
  } finally {
    for (const s of [...sockets, ...inside]) s.destroy();
    relay.close();
    target.close();
  }
});
