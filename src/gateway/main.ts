/**
 * A step's gateway, in its own container: the step's only way out. Reads its
 * config from standard input (one line of JSON: it holds the model's key,
 * which must not be in the container's environment for `docker inspect` to
 * show), listens on the step's network only (HTTP proxy and model API on
 * 3128, a name server on 53, a relay on RELAY_PORT when asked), prints one
 * JSON event per line, and on SIGTERM charges the calls still open at their
 * worst case, prints what it refused and exits.
 */
import { GATEWAY_PORT, parseConfig, type GatewayEvent } from './config.js';
import { addressIn } from './address.js';
import { startDns } from './dns.js';
import { Refusals, Unreachable, type Egress } from './egress.js';
import { Ledger } from './ledger.js';
import { ModelCalls } from './model-calls.js';
import { withRoots } from './outgoing.js';
import { startRelay } from './relay.js';
import { RunCa } from './run-ca.js';
import { gatewayServer } from './server.js';
import { Inspector } from './inspected.js';
import { TrustProbe } from './trust-probe.js';
import tls from 'node:tls';
import { bypassesProxy, connectThrough } from './upstream-proxy.js';
import net from 'node:net';

const emit = (e: GatewayEvent) => process.stdout.write(`${JSON.stringify(e)}\n`);
/** the config is small; a runner that sends nothing is not waited for long */
const MAX_CONFIG = 4 * 1024 * 1024;
const CONFIG_MS = 15_000;
/**
 * A held gateway (a warm pool's: RUNNER_GATEWAY_HELD=1) waits for its step this long at most: the pool gives its
 * gateways back after 10 idle minutes, and a runner that dies closes the gateway's standard input (StdinOnce), which
 * ends the wait at once.
 */
const HELD_MS = 6 * 3_600_000;
const HOUR_MS = 3_600_000;
/** how long the run's CA is valid when the gateway has no deadline */
const WEEK_MS = 7 * 24 * HOUR_MS;

/** The first line on standard input (the runner closes it after). */
function readConfigLine(): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const wait = process.env.RUNNER_GATEWAY_HELD === '1' ? HELD_MS : CONFIG_MS;
    const timer = setTimeout(() => reject(new Error(`no config on standard input within ${wait / 1000} s`)), wait);
    const done = () => {
      clearTimeout(timer);
      process.stdin.pause();
      resolve(text.split('\n')[0] ?? '');
    };
    process.stdin.setEncoding('utf8');
    process.stdin.on('data', (chunk: string) => {
      text += chunk;
      if (text.includes('\n')) done();
      else if (text.length > MAX_CONFIG) reject(new Error('the config on standard input is too large'));
    });
    process.stdin.on('end', done);
    process.stdin.on('error', reject);
  });
}

async function main(): Promise<void> {
  const config = parseConfig(await readConfigLine());
  if (typeof config === 'string') throw new Error(config);
  const address = addressIn(config.listenSubnet);
  if (!address) throw new Error(`no address in ${config.listenSubnet}: the gateway is not on the step's network`);
  const refusals = new Refusals((host, reason) => emit({ event: 'refused', host, reason }));
  const budgetRefusals = { count: 0 };
  const ca = withRoots(config.ca);
  const outgoing = { ...(ca ? { ca } : {}), ...(config.proxy ? { proxy: config.proxy } : {}) };
  const calls = config.model ? new ModelCalls(config.model, new Ledger(config.allowance), config.prices, emit, budgetRefusals, outgoing) : undefined;
  const policy = { hostAddresses: config.hostAddresses ?? [], privateAllowed: config.privateAllowed ?? [], hostNetworks: config.hostNetworks ?? [] };
  const egress: Egress = { allow: config.allow, refusals, policy, proxy: config.proxy, unreachable: new Unreachable((host, port, reason) => emit({ event: 'unreachable', host, port, reason })) };
  // a certificate the step will refuse is said at once, with whether the host's own bundle would trust it
  egress.probe = new TrustProbe({ roots: ca ?? tls.rootCertificates, hostCa: config.hostCa, emit });
  if (config.model) probeModel(egress.probe, config.model.upstream, config.proxy);
  // inspecting: a CA of the gateway's own, valid while the step may run, for the hosts it reads only
  if (config.inspect) {
    const runCa = await RunCa.make(config.inspect.all ? config.allow : config.inspect.hosts.map((h) => h.host), (config.deadlineMs ?? WEEK_MS) + HOUR_MS);
    egress.inspector = new Inspector(config.inspect, runCa, egress, ca, emit);
  }
  const server = gatewayServer(config, calls, egress);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(GATEWAY_PORT, address, resolve);
  });
  const dns = await startDns(address, 53, config.listenSubnet, (message) => emit({ event: 'error', message }));
  const relay = config.relay && (await startRelay(address, config.relay.port, config.listenSubnet, config.relay.to, (message) => emit({ event: 'error', message })));
  emit({ event: 'ready', address, ...(egress.inspector ? { caPem: egress.inspector.ca.pem } : {}) });
  const stop = () => {
    // what was sent and not yet answered is owed all the same
    calls?.abandonAll();
    emit({ event: 'refusals', hosts: Object.fromEntries(refusals.hosts), others: refusals.others, budget: budgetRefusals.count, paths: calls?.pathRefusals.count ?? 0 });
    dns.close();
    relay?.close();
    egress.inspector?.close();
    server.closeAllConnections();
    server.close();
    process.stdout.write('', () => process.exit(0));
  };
  process.on('SIGTERM', stop);
  // A runner that died cannot stop its gateway: it stops itself when the step's time is up.
  if (config.deadlineMs) setTimeout(stop, config.deadlineMs).unref();
}

/** The model's API, when it is HTTPS: probed as the gateway's own calls reach it (through the proxy unless NO_PROXY names it). */
function probeModel(probe: TrustProbe, upstream: string, proxy: Egress['proxy']): void {
  const url = new URL(upstream);
  if (url.protocol !== 'https:') return;
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = Number(url.port || 443);
  const via = proxy && !bypassesProxy(proxy.noProxy, host, port) ? proxy : undefined;
  probe.check(host, port, () =>
    via
      ? connectThrough(via, host, port)
      : new Promise((resolve, reject) => {
          const s = net.connect({ host, port }, () => resolve(s));
          s.once('error', reject);
        }),
  );
}

// One bad connection must not take the step's way out (and its metering) down: said, and the gateway goes on.
process.on('uncaughtException', (err) => emit({ event: 'error', message: `gateway: ${err.message}` }));

main().catch((err: Error) => {
  emit({ event: 'error', message: err.message });
  process.exit(1);
});
