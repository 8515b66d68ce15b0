/** Opening the way to a model on this machine: refused, saying why and what to do, where it cannot be made. */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { after, test } from 'node:test';
import { ContainerError } from '../../../src/common/errors.js';
import type { ContainerRuntime } from '../../../src/container/runtime.js';
import { MODEL_UNREACHABLE, openHostModelWay } from '../../../src/gateway/host/host-model-way.js';
import { hostModel } from '../../../src/plan/host-model.js';

const closers: Array<() => Promise<unknown>> = [];
after(() => Promise.all(closers.map((c) => c())));

/** An engine whose networks have these gateway addresses (all the way asks of it). */
const engine = (gateways: string[], asked: string[] = []) => ({ networkGateways: async (n?: string) => (asked.push(n ?? ''), gateways) }) as unknown as ContainerRuntime;

async function listening(): Promise<number> {
  const server = http.createServer((_q, r) => r.end('{}'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise((r) => server.close(r)));
  return (server.address() as AddressInfo).port;
}

async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const port = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return port;
}

const refused = (pattern: RegExp) => (err: unknown) => err instanceof ContainerError && err.code === MODEL_UNREACHABLE && pattern.test(err.message);
const quiet = { onProblem: () => undefined, onDown: () => undefined };

test('a model that does not answer is refused at once, by its address, saying what to do', async () => {
  const port = await closedPort();
  await assert.rejects(
    openHostModelWay({ model: hostModel(`http://127.0.0.1:${port}`)!, runtime: engine(['127.0.0.1']), egressNetwork: 'bridge', remote: false, ...quiet }),
    refused(new RegExp(`^the model at http://127\\.0\\.0\\.1:${port} does not answer \\(connection refused\\): start it`)),
  );
});

test('on a swarm (the gateway on the manager) a model on this machine is refused, saying why', async () => {
  const port = await listening();
  await assert.rejects(
    openHostModelWay({ model: hostModel(`http://localhost:${port}`)!, runtime: engine(['127.0.0.1']), egressNetwork: 'bridge', remote: true, ...quiet }),
    refused(/--engine swarm does not reach \(it runs on the swarm's manager/),
  );
});

test("a runner not on the engine's machine's network (in a container of its own network) cannot listen where the gateway reaches it: refused, saying so", async () => {
  const port = await listening();
  await assert.rejects(
    openHostModelWay({ model: hostModel(`http://127.0.0.1:${port}`)!, runtime: engine(['192.0.2.1']), egressNetwork: 'egress', remote: false, ...quiet }),
    refused(/network egress, and the runner cannot listen on 192\.0\.2\.1: it does not run on the engine's machine's network \(a runner in a container of its own network/),
  );
  await assert.rejects(
    openHostModelWay({ model: hostModel(`http://127.0.0.1:${port}`)!, runtime: engine([]), egressNetwork: 'egress', remote: false, ...quiet }),
    refused(/no IPv4 gateway address/),
  );
});

test("the relay listens on this machine's address on the egress network, asked of the engine by that network's name", async () => {
  const port = await listening();
  const asked: string[] = [];
  const relay = await openHostModelWay({ model: hostModel(`http://127.0.0.1:${port}/v1`)!, runtime: engine(['fd00::1', '127.0.0.1'], asked), egressNetwork: 'bridge', remote: false, ...quiet });
  closers.push(() => relay.close());
  assert.deepEqual(asked, ['bridge']);
  assert.equal(relay.host, '127.0.0.1');
  assert.match(relay.upstream, /^http:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]+\/v1$/);
});
