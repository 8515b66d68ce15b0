/**
 * A step's gateway, in its own container: the step's only way out. Reads its
 * config from RUNNER_GATEWAY_CONFIG, listens on the step's network only
 * (HTTP proxy and model API on 3128, a name server on 53, a relay on
 * RELAY_PORT when asked), prints one JSON event per line, and on SIGTERM
 * prints what it refused and exits.
 */
import { GATEWAY_PORT, parseConfig, type GatewayEvent } from './config.js';
import { addressIn } from './address.js';
import { startDns } from './dns.js';
import { Refusals } from './egress.js';
import { Ledger } from './ledger.js';
import { startRelay } from './relay.js';
import { gatewayServer } from './server.js';

const emit = (e: GatewayEvent) => process.stdout.write(`${JSON.stringify(e)}\n`);

async function main(): Promise<void> {
  const config = parseConfig(process.env.RUNNER_GATEWAY_CONFIG);
  delete process.env.RUNNER_GATEWAY_CONFIG;
  if (typeof config === 'string') throw new Error(config);
  const address = addressIn(config.listenSubnet);
  if (!address) throw new Error(`no address in ${config.listenSubnet}: the gateway is not on the step's network`);
  const refusals = new Refusals((host, reason) => emit({ event: 'refused', host, reason }));
  const budgetRefusals = { count: 0 };
  const server = gatewayServer(config, new Ledger(config.allowance), { allow: config.allow, refusals }, emit, budgetRefusals);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(GATEWAY_PORT, address, resolve);
  });
  const dns = await startDns(address, 53, config.listenSubnet, (message) => emit({ event: 'error', message }));
  const relay = config.relay && (await startRelay(address, config.relay.port, config.listenSubnet, config.relay.to, (message) => emit({ event: 'error', message })));
  emit({ event: 'ready', address });
  const stop = () => {
    emit({ event: 'refusals', hosts: Object.fromEntries(refusals.hosts), others: refusals.others, budget: budgetRefusals.count });
    dns.close();
    relay?.close();
    server.closeAllConnections();
    server.close();
    process.stdout.write('', () => process.exit(0));
  };
  process.on('SIGTERM', stop);
  // A runner that died cannot stop its gateway: it stops itself when the step's time is up.
  if (config.deadlineMs) setTimeout(stop, config.deadlineMs).unref();
}

// One bad connection must not take the step's way out (and its metering) down: said, and the gateway goes on.
process.on('uncaughtException', (err) => emit({ event: 'error', message: `gateway: ${err.message}` }));

main().catch((err: Error) => {
  emit({ event: 'error', message: err.message });
  process.exit(1);
});
