/**
 * bench/inspection: what reading a host's requests costs against a plain
 * tunnel. The gateway's server runs here on loopback with an HTTPS server of
 * the bench's own behind it (reached through the test company proxy, as the
 * gateway tests do: a name never leads to loopback otherwise); a client in
 * another process opens a tunnel to a host the gateway only tunnels and to
 * one it inspects (a rule, a credential, the secret checks), alternated in
 * the same run:
 * - latency: sequential small GETs on one kept-alive connection each way,
 *   the median added per request (aim: under 5 ms); and the first request
 *   on a new connection (CONNECT, TLS, GET), for the figure;
 * - throughput: a 100 MB download each way, the ratio of their speeds
 *   (aim: at least 0.7 of the tunnel's).
 *
 *   node dist/bench/inspection.js [ROUNDS] [REQUESTS]
 */
import { execFile, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import type net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { Inspection } from '../src/gateway/config.js';
import { Refusals, type Egress } from '../src/gateway/egress.js';
import { Inspector } from '../src/gateway/inspected.js';
import { withRoots } from '../src/gateway/outgoing.js';
import { RunCa } from '../src/gateway/run-ca.js';
import { gatewayServer } from '../src/gateway/server.js';
import { makeTestCa } from '../test/fixtures/test-ca.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const REQUESTS = Number(process.argv[3] ?? 200);
const BIG = 100 * 1000 * 1000;
const run = promisify(execFile);
const HERE = path.dirname(fileURLToPath(import.meta.url));

// The client, in its own process: raw HTTP/1.1 over TLS in a CONNECT tunnel; one JSON result on stdout.
const CLIENT = `
import http from 'node:http';
import tls from 'node:tls';
import { readFileSync } from 'node:fs';
const [port, host, caFile, mode, n] = process.argv.slice(1);
const ca = readFileSync(caFile, 'utf8');
function open() {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: Number(port), method: 'CONNECT', path: host + ':443' });
    req.on('connect', (res, socket) => {
      if (res.statusCode !== 200) return reject(new Error('CONNECT ' + res.statusCode));
      const t = tls.connect({ socket, servername: host, ca, ALPNProtocols: ['http/1.1'] }, () => resolve(t));
      t.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}
// one request on t; resolves with the body's length once it is all in
function get(t, path) {
  return new Promise((resolve, reject) => {
    let head = Buffer.alloc(0), need = -1, got = 0;
    const onData = (b) => {
      if (need < 0) {
        head = Buffer.concat([head, b]);
        const end = head.indexOf('\\r\\n\\r\\n');
        if (end < 0) return;
        need = Number(/content-length: *(\\d+)/i.exec(head.subarray(0, end).toString())[1]);
        got = head.length - end - 4;
      } else got += b.length;
      if (got >= need) { t.off('data', onData); resolve(got); }
    };
    t.on('data', onData);
    t.once('error', reject);
    t.write('GET ' + path + ' HTTP/1.1\\r\\nhost: ' + host + '\\r\\n\\r\\n');
  });
}
const out = [];
if (mode === 'latency') {
  const t = await open();
  for (let i = 0; i < Number(n) + 5; i++) { const t0 = performance.now(); await get(t, '/small'); if (i >= 5) out.push(performance.now() - t0); }
  t.destroy();
} else if (mode === 'fresh') {
  for (let i = 0; i < Number(n); i++) { const t0 = performance.now(); const t = await open(); await get(t, '/small'); out.push(performance.now() - t0); t.destroy(); }
} else {
  const t = await open();
  const t0 = performance.now();
  const bytes = await get(t, '/big');
  out.push(bytes / ((performance.now() - t0) / 1000) / 1e6);
  t.destroy();
}
console.log(JSON.stringify(out));
`;

const testCa = makeTestCa(['tunnel.example', 'api.example']);
// the host and the company proxy in a process of their own: the gateway's CPU is its own, as in a container
const servers = spawn(process.execPath, [path.join(HERE, 'inspection-servers.js'), testCa.keyFile, testCa.certFile, String(BIG)], { stdio: ['pipe', 'pipe', 'inherit'] });
const proxyPort = await new Promise<number>((resolve, reject) => {
  servers.stdout.once('data', (b: Buffer) => resolve(Number(b.toString().trim())));
  servers.once('exit', (code) => reject(new Error(`the bench's servers ended (${code})`)));
});
const inspect: Inspection = {
  hosts: [{ host: 'api.example', methods: ['GET', 'POST'], paths: ['/**'], credential: { name: 'bench', headers: { authorization: 'Bearer bench-credential-value' } } }],
  secrets: [
    { name: 'DB_PASSWORD', value: 'bench-db-password-value' },
    { name: 'bench', value: 'bench-credential-value' },
  ],
  maxBodyBytes: 10 * 1024 * 1024,
};
const allow = ['tunnel.example', 'api.example'];
const egress: Egress = { allow, refusals: new Refusals(() => undefined), policy: { hostAddresses: [], privateAllowed: [] }, proxy: { host: '127.0.0.1', port: proxyPort, noProxy: [] } };
const runCa = await RunCa.make(['api.example'], 3_600_000);
egress.inspector = new Inspector(inspect, runCa, egress, withRoots(testCa.caPem), () => undefined);
const server = gatewayServer({ allow, prices: {}, listenSubnet: '127.0.0.0/8' }, undefined, egress);
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
const port = String((server.address() as net.AddressInfo).port);
const runCaFile = path.join(testCa.dir, 'run-ca.pem');
writeFileSync(runCaFile, runCa.pem);

async function client(host: string, mode: string, n: number): Promise<number[]> {
  const { stdout } = await run(process.execPath, ['--input-type=module', '-e', CLIENT, port, host, host === 'api.example' ? runCaFile : testCa.caFile, mode, String(n)], { maxBuffer: 1 << 20 });
  return JSON.parse(stdout.trim()) as number[];
}

try {
  const lat = { tunnel: [] as number[], inspected: [] as number[] };
  const fresh = { tunnel: [] as number[], inspected: [] as number[] };
  const speed = { tunnel: [] as number[], inspected: [] as number[] };
  for (let i = 0; i < ROUNDS; i++) {
    lat.tunnel.push(...(await client('tunnel.example', 'latency', REQUESTS)));
    lat.inspected.push(...(await client('api.example', 'latency', REQUESTS)));
    fresh.tunnel.push(...(await client('tunnel.example', 'fresh', 10)));
    fresh.inspected.push(...(await client('api.example', 'fresh', 10)));
    speed.tunnel.push(...(await client('tunnel.example', 'download', 1)));
    speed.inspected.push(...(await client('api.example', 'download', 1)));
  }
  const [lt, li, ft, fi, st, si] = [lat.tunnel, lat.inspected, fresh.tunnel, fresh.inspected, speed.tunnel, speed.inspected].map(median) as [number, number, number, number, number, number];
  report({
    bench: 'inspection latency',
    against: 'a plain tunnel',
    aim: '<= 5',
    ratio: li - lt,
    unit: 'ms added per request',
    detail: `a small GET on a kept-alive connection: ${li.toFixed(2)} ms inspected, ${lt.toFixed(2)} ms through a tunnel (medians of ${ROUNDS} x ${REQUESTS}); the first request on a new connection (CONNECT, TLS, GET): ${fi.toFixed(1)} ms inspected, ${ft.toFixed(1)} ms tunnel (medians of ${ROUNDS} x 10)`,
  });
  report({
    bench: 'inspection throughput',
    against: 'a plain tunnel',
    aim: '>= 0.7',
    ratio: si / st,
    detail: `a 100 MB download: ${si.toFixed(0)} MB/s inspected, ${st.toFixed(0)} MB/s through a tunnel (medians of ${ROUNDS})`,
  });
} finally {
  egress.inspector.close();
  server.closeAllConnections();
  server.close();
  servers.kill();
  testCa.close();
}
