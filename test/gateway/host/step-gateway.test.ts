/**
 * startGateway's promises about time: it returns once the gateway's container
 * runs, before its program listens, and says later whether it ever did. The
 * engine here is a scripted one (what the gateway prints, when it ends): the
 * real engine's part is in test/integration/gateway-*.test.ts.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ContainerHandle, ContainerRuntime, ContainerSpec, OutputHandler } from '../../../src/container/runtime.js';
import { startGateway, openGateway } from '../../../src/gateway/host/step-gateway.js';

/** A gateway container that prints what the test says, when it says, and ends when told. */
class ScriptedGateway {
  stdout: OutputHandler = () => undefined;
  private end!: () => void;
  readonly ended = new Promise<void>((r) => (this.end = r));
  started = false;
  removed = false;
  /** the engine refuses to start it */
  refuse?: string;
  constructor(readonly address: string) {}
  say(line: object): void {
    void this.stdout(Buffer.from(`${JSON.stringify(line)}\n`));
  }
  exit(): void {
    this.end();
  }
  handle(): ContainerHandle {
    return {
      id: 'gw',
      attach: async (out) => ((this.stdout = out), { ended: this.ended, close: () => undefined }),
      start: async () => {
        if (this.refuse) throw new Error(this.refuse);
        this.started = true;
      },
      wait: () => this.ended,
      waitNotRunning: () => this.ended,
      inspect: async () => ({ exitCode: 1, oomKilled: false }),
      pidsLimitHits: async () => undefined,
      stop: async () => this.exit(),
      kill: async () => this.exit(),
      remove: async () => void (this.removed = true),
      connect: async () => undefined,
      addressOn: async () => (this.started ? this.address : undefined),
    };
  }
}

function engine(gw: ScriptedGateway): ContainerRuntime & { networks: Set<string>; specs: ContainerSpec[] } {
  const networks = new Set<string>();
  const specs: ContainerSpec[] = [];
  const no = async (): Promise<never> => {
    throw new Error('not used');
  };
  return {
    networks,
    specs,
    ping: async () => undefined,
    ensureImage: no,
    hasImage: no,
    imageLabels: no,
    create: async (spec) => (specs.push(spec), gw.handle()),
    checkIsolation: async () => [],
    checkHostPaths: async () => undefined,
    listByLabels: async () => [],
    removeByLabels: async () => 0,
    createNetwork: async (spec) => (networks.add(spec.name), { subnet: '10.99.0.0/24' }),
    removeNetwork: async (name) => void networks.delete(name),
    networkGateways: async () => [],
    removeNetworksByLabels: async () => 0,
  };
}

const options = { name: 'runner-t-go.1-gw', labels: {}, egressNetwork: 'bridge', config: { allow: [], prices: {} }, onEvent: () => undefined };

test('startGateway returns once the container runs, with its address, before the gateway listens; listening says when it does', async () => {
  const gw = new ScriptedGateway('10.99.0.2');
  const rt = engine(gw);
  const way = await startGateway(rt, options);
  assert.deepEqual(way.dns, ['10.99.0.2']);
  assert.equal(way.network, 'runner-t-go.1-gw-net');
  // the key goes on standard input, with the step's subnet to listen on
  assert.match(rt.specs[0]!.stdin!, /"listenSubnet":"10\.99\.0\.0\/24"/);
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
