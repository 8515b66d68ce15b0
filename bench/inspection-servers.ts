/**
 * bench/inspection's host and company proxy, in a process of their own: an
 * HTTPS server (key and certificate files as arguments) answering `/big` with
 * BYTES bytes and anything else with `ok`, and the test proxy leading every
 * name to it. Prints the proxy's port; ends with its parent.
 */
import { readFileSync } from 'node:fs';
import https from 'node:https';
import type net from 'node:net';
import { startConnectProxy } from '../test/fixtures/connect-proxy.js';

const [keyFile, certFile, bytes] = process.argv.slice(2) as [string, string, string];
const BIG = Number(bytes);
const chunk = Buffer.alloc(1 << 20, 'x');
const upstream = https.createServer({ key: readFileSync(keyFile), cert: readFileSync(certFile) }, (req, res) => {
  req.resume();
  if (req.url !== '/big') return void res.writeHead(200, { 'content-length': 2 }).end('ok');
  res.writeHead(200, { 'content-length': BIG, 'content-type': 'application/octet-stream' });
  let left = BIG;
  const more = () => {
    while (left > 0) {
      const n = Math.min(left, chunk.length);
      left -= n;
      if (!res.write(n === chunk.length ? chunk : chunk.subarray(0, n))) return void res.once('drain', more);
    }
    res.end();
  };
  more();
});
await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
const proxy = await startConnectProxy(() => ({ host: '127.0.0.1', port: (upstream.address() as net.AddressInfo).port }));
process.stdout.write(`${proxy.port}\n`);
// the parent's end closes this pipe: end too
process.stdin.resume();
process.stdin.on('end', () => process.exit(0));
