/**
 * bench/gateway-latency: what the gateway adds to a model call. A client in a
 * container makes streaming Messages API calls to the scripted model, once
 * directly (on the default bridge) and once through a step's gateway (from
 * the step's own network, as an agent does), in alternating batches in the
 * same run. Prints the median per call each way and the difference (aim: 5 ms
 * or less added).
 *
 *   make bench            (or: node dist/bench/gateway-latency.js [ROUNDS] [CALLS])
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { DockerRuntime } from '../src/container/local/docker.js';
import { openGateway } from '../src/gateway/host/step-gateway.js';
import { DEFAULT_PRICES } from '../src/gateway/prices.js';
import { ModelServer } from '../test/fixtures/model-server.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const CALLS = Number(process.argv[3] ?? 40);
const run = promisify(execFile);


// Sequential calls, each timed from request to the end of its streamed answer; one JSON list of ms on stdout.
const CLIENT = `
const [url, n] = [process.argv[1], Number(process.argv[2])];
const body = JSON.stringify({ model: 'claude-sonnet-4-5', max_tokens: 64, stream: true, tools: [{ name: 't', input_schema: { type: 'object' } }], messages: [{ role: 'user', content: 'hi' }] });
const out = [];
for (let i = 0; i < n + 3; i++) {
  const t0 = performance.now();
  const r = await fetch(url + '/v1/messages', { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'placeholder', 'anthropic-version': '2023-06-01' }, body });
  await r.text();
  if (r.status !== 200) throw new Error('status ' + r.status);
  if (i >= 3) out.push(performance.now() - t0);
}
console.log(JSON.stringify(out));
`;

async function batch(args: string[], url: string): Promise<number[]> {
  const { stdout } = await run('docker', ['run', '--rm', ...args, 'runner/toolchain:latest', 'node', '--input-type=module', '-e', CLIENT, url, String(CALLS)], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim().split('\n').pop()!) as number[];
}

const server = await ModelServer.start({ turns: Array.from({ length: 2 * ROUNDS * (CALLS + 3) + 10 }, () => ({ text: 'Done.' })), usage: { input: 10, output: 5 } });
const runtime = new DockerRuntime();
const gw = await openGateway(runtime, {
  name: `runner-bench-gw-${process.pid}`,
  labels: { 'dev.runner.bench': 'gateway-latency' },
  egressNetwork: 'bridge',
  config: { allow: [], model: { kind: 'anthropic', upstream: server.url }, prices: DEFAULT_PRICES },
  onEvent: () => undefined,
});
try {
  const direct: number[] = [];
  const through: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    direct.push(...(await batch(['--network', 'bridge'], server.url)));
    through.push(...(await batch(['--network', gw.network, '--dns', gw.dns[0]!], 'http://runner-gateway:3128')));
  }
  const d = median(direct);
  const g = median(through);
  report({
    bench: 'gateway latency',
    against: 'the scripted model directly',
    aim: '<= 5',
    ratio: g - d,
    unit: 'ms added per call',
    detail: `${g.toFixed(2)} ms through the gateway, ${d.toFixed(2)} ms direct (medians of ${ROUNDS} x ${CALLS} streaming calls)`,
  });
} finally {
  const closed = await gw.close();
  await server.close();
  if (closed.totals.calls !== ROUNDS * (CALLS + 3)) console.error(`gateway latency: the gateway metered ${closed.totals.calls} calls, expected ${ROUNDS * (CALLS + 3)}`);
}
