/**
 * A swarm job is created with the registry's credentials in its X-Registry-Auth header, so that the node it lands
 * on pulls its image with them, and never with them in its spec (its env, its command, its labels). The swarm itself
 * is the swarm lab's (test/integration/swarm*.test.ts, not run here): this is what the runner sends the manager's
 * API, recorded by an HTTP server of the test's own standing in for it on loopback.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import Docker from 'dockerode';
import { RegistryCredentials } from '../../../src/container/registry-credentials.js';
import type { ContainerSpec } from '../../../src/container/runtime.js';
import { SwarmRuntime } from '../../../src/container/swarm/runtime.js';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}
const seen: Seen[] = [];
const server = http.createServer((req, res) => {
  let body = '';
  req.on('data', (c: Buffer) => (body += c.toString()));
  req.on('end', () => {
    seen.push({ method: req.method!, url: req.url!, headers: req.headers, body });
    const url = req.url!.replace(/^\/v[\d.]+/, '');
    res.setHeader('content-type', 'application/json');
    if (url.startsWith('/networks')) return res.end(JSON.stringify([{ Name: 'runner-swarm' }]));
    if (url.startsWith('/services/create')) return res.writeHead(201).end(JSON.stringify({ ID: 'svc1' }));
    if (req.method === 'GET') return res.end('[]');
    res.end('{}');
  });
});
await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
after(() => server.close());
const api = new Docker({ host: '127.0.0.1', port: (server.address() as { port: number }).port, protocol: 'http' });

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-swarm-auth-'));
const PASSWORD = 'pw-that-must-stay-with-the-engine';
writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ auths: { 'registry.company.example': { auth: Buffer.from(`robot:${PASSWORD}`).toString('base64') } } }));
const credentials = new RegistryCredentials(path.join(dir, 'config.json'));

const spec = (image: string): ContainerSpec => ({
  name: `run-x-lint`, image, cmd: ['sh', '-c', 'true'], env: { A: '1' }, workingDir: '/w', user: '1000:1000', mounts: [],
  memoryBytes: 256 * 1024 ** 2, cpus: 1, pids: 64, openFiles: 1024, fileSizeBytes: 1 << 30, readOnlyRoot: false, capAdd: [],
  network: 'bridge', labels: { 'dev.runner.run-id': 'x' },
});

async function created(image: string): Promise<Seen> {
  seen.length = 0;
  const handle = await new SwarmRuntime(api, undefined, credentials).create(spec(image));
  await handle.start();
  await handle.remove();
  const create = seen.find((s) => s.method === 'POST' && s.url.includes('/services/create'));
  assert.ok(create, `a service was created: ${seen.map((s) => `${s.method} ${s.url}`).join(', ')}`);
  return create;
}

test("a private image's job carries the registry's credentials in X-Registry-Auth, never in its spec", async () => {
  const create = await created('registry.company.example/tools/lint:3');
  const header = create.headers['x-registry-auth'];
  assert.ok(typeof header === 'string', 'the header is sent');
  const auth = JSON.parse(Buffer.from(header.replace(/-/g, '+').replace(/_/g, '/'), 'base64').toString());
  assert.deepEqual(auth, { username: 'robot', password: PASSWORD, serveraddress: 'registry.company.example' });
  assert.equal(JSON.parse(create.body).TaskTemplate.ContainerSpec.Image, 'registry.company.example/tools/lint:3');
  for (const s of seen) {
    assert.doesNotMatch(s.body, new RegExp(PASSWORD), `${s.method} ${s.url}: the body never holds the password`);
    assert.doesNotMatch(s.url, new RegExp(PASSWORD));
  }
});

test('an image of a registry it has nothing for, or named by ID, goes without the header (not even an empty one)', async () => {
  assert.equal((await created('node:20')).headers['x-registry-auth'], undefined);
  assert.equal((await created('sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef')).headers['x-registry-auth'], undefined);
});
