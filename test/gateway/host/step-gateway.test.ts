/**
 * startGateway's promises about time: it returns once the gateway's container
 * runs, before its program listens, and says later whether it ever did. The
 * engine here is a scripted one (what the gateway prints, when it ends): the
 * real engine's part is in test/integration/gateway-*.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engine, ScriptedGateway } from '../../fixtures/scripted-gateway.js';
import { startGateway, openGateway } from '../../../src/gateway/host/step-gateway.js';

const options = { name: 'runner-t-go.1-gw', labels: {}, egressNetwork: 'bridge', config: { allow: [], prices: {} }, onEvent: () => undefined };

test('startGateway returns once the container runs, with its address, before the gateway listens; listening says when it does', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const rt = engine(gw);
  const way = await startGateway(rt, options);
  assert.deepEqual(way.dns, ['10.99.0.2']);
  assert.equal(way.network, 'runner-t-go.1-gw-net');
  // the key goes on standard input, with the step's subnet to listen on
  assert.match(rt.specs[0]!.stdin as string, /"listenSubnet":"10\.99\.0\.0\/24"/);
  let listened = false;
  void way.listening.then(() => (listened = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(listened, false);
  gw.say({ event: 'ready', address: '10.99.0.2' });
  await way.listening;
  const report = await way.close();
  assert.equal(report.died, undefined);
  assert.equal(report.neverListened, undefined);
  assert.equal(gw.removed, true);
  assert.equal(rt.networks.size, 0);
});

test('a gateway that ends before it listens: listening rejects with what it said, and its report says the step had no way out', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const way = await startGateway(engine(gw), options);
  gw.exit();
  await assert.rejects(way.listening, /the step's gateway did not start/);
  const report = await way.close();
  assert.equal(report.neverListened, true);
  assert.match(report.died!, /did not start.*the step had no way out/);
});

test('a gateway that listens elsewhere than the address its step was given is a failure, not a step reaching nothing', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const way = await startGateway(engine(gw), options);
  gw.say({ event: 'ready', address: '10.99.0.3' });
  await assert.rejects(way.listening, /listens on 10\.99\.0\.3, not on 10\.99\.0\.2/);
  assert.equal((await way.close()).neverListened, true);
});

test('closed before it listened (a step that needed no call): nothing failed, and no timer holds the process', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const way = await startGateway(engine(gw), options);
  const report = await way.close();
  await way.listening;
  assert.equal(report.died, undefined);
  assert.equal(report.neverListened, undefined);
});

test('openGateway (a relay) waits until it listens, and cleans up when it never does', async () => {
  const gw = new ScriptedGateway('10.99.0.7');
  const rt = engine(gw);
  const opening = openGateway(rt, options);
  setTimeout(() => gw.exit(), 20);
  await assert.rejects(opening, /did not start/);
  assert.equal(gw.removed, true);
  assert.equal(rt.networks.size, 0);
});

test('a gateway the engine cannot start: startGateway says why, and leaves no container or network behind', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  gw.refuse = 'docker failed starting the container: no such network';
  const rt = engine(gw);
  await assert.rejects(startGateway(rt, options), /the step's gateway did not start: docker failed starting the container: no such network/);
  assert.equal(gw.removed, true);
  assert.equal(rt.networks.size, 0);
});
