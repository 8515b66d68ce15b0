/**
 * Warm gateways on a swarm (--engine swarm --warm N), attacked: on the real 3-node lab (scripts/swarm-lab.sh, used
 * as swarm-agents.test.ts uses it: `up` is idempotent), real containers. A runner killed with -9 leaves its warm
 * gateways (containers on the manager, on overlays of their own); whatever the next runner of the home is (a
 * `runner serve --engine swarm` without --warm, whose recovery asks the swarm; a `runner runs ls`, whose recovery
 * asks this machine's engine), it removes them and their overlays. A network: none step's warm relay allows nothing.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { execPipeline, git, projectsForThisFile, runCli, spawnServe, until, writePipeline, type Fixture, type ServeProcess } from '../fixtures/project.js';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const LAB = path.join(REPO, 'scripts/swarm-lab.sh');
const run = promisify(execFile);
const fixture = projectsForThisFile();

before(async () => {
  // RUNNER_LAB_UP=1: the lab is up already, as its caller brought it (a session that may not run the script)
  if (process.env.RUNNER_LAB_UP === '1') return;
  await run('bash', [LAB, 'up'], { env: { ...process.env, LAB_IMAGES: 'runner/base:latest' }, maxBuffer: 1 << 24 });
}, { timeout: 600_000 });

// as every swarm file: the lab down after it (unless its caller brought it up)
after(async () => {
  if (process.env.RUNNER_LAB_UP !== '1') await run('bash', [LAB, 'down'], { maxBuffer: 1 << 24 });
}, { timeout: 300_000 });

const serves: ServeProcess[] = [];
after(() => {
  for (const s of serves) if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
});

const label = (f: Fixture) => `label=dev.runner.home=${f.home}`;
/** the home's containers on the manager (warm gateways among them) */
const containers = (f: Fixture) => execFileSync('docker', ['ps', '-aq', '--filter', label(f)], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
const overlays = (f: Fixture) => execFileSync('docker', ['network', 'ls', '--filter', label(f), '--format', '{{.Name}}'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
const warmOnes = (f: Fixture) => execFileSync('docker', ['ps', '-q', '--filter', label(f), '--filter', 'label=dev.runner.warm-owner'], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);

/** `runner serve --engine swarm ARGS` on the fixture's home, listening (its recovery done) */
async function serveOn(f: Fixture, args: string[]): Promise<ServeProcess> {
  const dir = path.join(f.root, 'pipelines');
  await mkdir(dir, { recursive: true });
  const s = spawnServe(['--engine', 'swarm', '--pipelines', dir, '--home', f.home, '--grace', '2s', '--listen', '127.0.0.1:0', ...args]);
  serves.push(s);
  await s.waitFor(/listening on (http:\/\/\S+)/, 60_000);
  return s;
}

/** A `runner serve --engine swarm --warm 2` killed with -9 once its two gateways are warm: what it left. */
async function killedWarmServe(f: Fixture): Promise<void> {
  const s = await serveOn(f, ['--warm', '2']);
  await until('two warm gateways on the manager', async () => (warmOnes(f).length === 2 ? true : undefined), 90_000);
  s.child.kill('SIGKILL');
  await s.exited;
  assert.equal(warmOnes(f).length, 2, 'the killed server left its warm gateways');
  assert.ok(overlays(f).length >= 2, `and their overlays: ${overlays(f).join(' ')}`);
}

async function noneLeft(f: Fixture): Promise<void> {
  assert.deepEqual(containers(f), [], 'no container of the home is left on the manager');
  // a swarm removes an overlay from its store at once, and from the manager's own engine a few seconds later
  for (let i = 0; i < 60 && overlays(f).length; i++) await new Promise((r) => setTimeout(r, 250));
  assert.deepEqual(overlays(f), [], 'no overlay of the home is left');
}

test('runner serve --engine swarm --warm 2 killed with -9: the next runner serve --engine swarm of the home (without --warm) removes its warm gateways and their overlays', { timeout: 240_000 }, async () => {
  const f = await fixture();
  await killedWarmServe(f);
  const next = await serveOn(f, []);
  try {
    await noneLeft(f);
  } finally {
    next.child.kill('SIGTERM');
    await next.exited;
    // what this test's own attack left is not left for the next test
    await runCli(['runs', 'ls', '--home', f.home]);
  }
});

test('runner serve --engine swarm --warm 2 killed with -9: the next `runner runs ls` of the home removes its warm gateways and their overlays', { timeout: 240_000 }, async () => {
  const f = await fixture();
  await killedWarmServe(f);
  const r = await runCli(['runs', 'ls', '--home', f.home]);
  assert.equal(r.code, 0, r.stderr);
  await noneLeft(f);
});

/** A raw HTTP request from a step (runner/base has bash, not curl): its status line, or `unreached`. */
const ask = (port: number | string, request: string, file: string) =>
  `timeout 5 bash -c 'exec 3<>/dev/tcp/'"$GW"'/${port}; printf "${request}" >&3; head -n 1 <&3' 2>/dev/null | tr -d '\\r' > ${file}; [ -s ${file} ] || echo unreached > ${file}`;

test('runner exec --engine swarm --warm 2, a network: none step on a worker: its warm relay allows nothing (its proxy refuses every host, the runner\'s own address too, and it has no model route); nothing of the pool is left', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const host = execFileSync('docker', ['info', '-f', '{{.Swarm.NodeAddr}}'], { encoding: 'utf8' }).trim();
  const seen: string[] = [];
  const listener = net.createServer((s) => {
    seen.push(s.remoteAddress ?? '?');
    s.end('HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n');
  });
  await new Promise<void>((r) => listener.listen(0, '0.0.0.0', r));
  const port = (listener.address() as net.AddressInfo).port;
  const script = [
    // its relay: the one neighbour on its network (it fetched its workspace through it)
    `GW=$(awk 'NR > 1 {print $1; exit}' /proc/net/arp)`,
    'echo "$GW" > gw.txt',
    ask(3128, 'GET http://denied.example/ HTTP/1.1\\r\\nHost: denied.example\\r\\nConnection: close\\r\\n\\r\\n', 'proxy.txt'),
    ask(3128, `CONNECT ${host}:${port} HTTP/1.1\\r\\nHost: ${host}:${port}\\r\\n\\r\\n`, 'connect.txt'),
    ask(3128, `GET http://${host}:${port}/ HTTP/1.1\\r\\nHost: ${host}:${port}\\r\\nConnection: close\\r\\n\\r\\n`, 'plain.txt'),
    ask(3128, 'POST /v1/messages HTTP/1.1\\r\\nHost: api.anthropic.com\\r\\nContent-Type: application/json\\r\\nContent-Length: 2\\r\\nConnection: close\\r\\n\\r\\n{}', 'model.txt'),
  ].join('\n');
  try {
    const file = await writePipeline(f, `version: 1
name: relayed
project: { path: project, push: never }
defaults: { image: runner/base:latest, resources: { memory: 64m, cpus: 0.2, pids: 64 }, timeout: 2m }
steps:
  - id: closed
    network: none
    placement: ["node.role == worker"]
    run: ${JSON.stringify(script)}
`);
    const r = await execPipeline(f, file, ['--engine', 'swarm', '--warm', '2']);
    assert.equal(r.code, 0, r.stderr);
    const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'closed.log'), 'utf8');
    assert.match(log, /runner: relay: a warm gateway/, log);
    const out = (name: string) => git(f.project, 'show', `${r.json.branch}:${name}`);
    assert.match(out('gw.txt'), /^\d+\.\d+\.\d+\.\d+$/, 'the step has its relay as its name server');
    assert.match(out('proxy.txt'), /^HTTP\/1\.1 403/, `a host through the relay's proxy: ${out('proxy.txt')}`);
    assert.match(out('connect.txt'), /^HTTP\/1\.1 403/, `a tunnel to the runner's machine: ${out('connect.txt')}`);
    assert.match(out('plain.txt'), /^HTTP\/1\.1 403/, `a plain request to the runner's machine: ${out('plain.txt')}`);
    assert.match(out('model.txt'), /^HTTP\/1\.1 404/, `the model route: ${out('model.txt')}`);
    assert.deepEqual(seen, [], 'nothing reached the runner\'s machine past the relay');
    await noneLeft(f);
  } finally {
    listener.close();
  }
});
