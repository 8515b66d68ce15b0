/**
 * Warm gateways (src/gateway/host/gateway-pool.ts), with the real engine and the gateway's image: steps behind a
 * gateway (egress:, no model needed) take one each, made ahead and given to that step alone; the pool leaves nothing
 * behind when its runner ends, and what a runner killed with -9 left is removed by the next pool of its home;
 * runner serve says how many are warm. gateway-keys and gateway-attacks are played again with RUNNER_WARM=2
 * (scripts/test-suite.sh).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, execPipeline, projectsForThisFile, runCli, serveFolder, spawnServe, until, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const step = (id: string, extra = '') => `  - id: ${id}
    image: runner/toolchain:latest
    egress: [allowed.example]
    timeout: 2m
    run: |
      awk '$2 == "runner-gateway" { print "ns=" $1 }' /etc/hosts
${extra}`;

const pipeline = (steps: string, name = 'warm', project = 'project') => `version: 1
name: ${name}
project: { path: ${project} }
steps:
${steps}`;

/** Containers and networks a warm pool of this home made, by their labels. */
function warmLeft(f: Fixture): { containers: string[]; networks: string[] } {
  const labels = ['--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.warm-owner'];
  const lines = (args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean);
  return { containers: lines(['ps', '-a', ...labels, '--format', '{{.Names}}']), networks: lines(['network', 'ls', ...labels, '--format', '{{.Name}}']) };
}

async function logOf(f: Fixture, runId: string, step: string): Promise<string> {
  return readFile(path.join(f.home, 'runs', runId, 'steps', `${step}.log`), 'utf8');
}

test('runner exec --warm 2: each step behind a gateway takes a warm one of its own; nothing of the pool is left after', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const r = await execPipeline(f, await writePipeline(f, pipeline(step('one') + step('two') + step('three'))), ['--warm', '2']);
  assert.equal(r.code, 0, r.stderr);
  const ns: string[] = [];
  for (const id of ['one', 'two', 'three']) {
    const log = await logOf(f, r.json.runId, id);
    assert.match(log, /runner: gateway: a warm one, made ahead for no step in particular and given to this one alone/, `${id}:\n${log}`);
    ns.push(/^ns=(\S+)/m.exec(log)![1]!);
  }
  assert.equal(new Set(ns).size, 3, `three gateways on three networks, none used twice: ${ns.join(' ')}`);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});

test('without --warm a step starts its own gateway, as before', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const r = await execPipeline(f, await writePipeline(f, pipeline(step('cold'))));
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(await logOf(f, r.json.runId, 'cold'), /a warm one/);
});

test('what a runner killed with -9 left warm is removed by the next pool of its home', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline(step('slow', '      sleep 60\n')));
  const child = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home, '--warm', '2'], { env: { ...process.env, CI: 'true' }, stdio: 'ignore' });
  // the step runs on one warm gateway, and the pool made another behind it
  await until('the pool to refill while the step runs', async () => (warmLeft(f).containers.length >= 2 ? true : undefined), 60_000);
  child.kill('SIGKILL');
  await new Promise((r) => child.on('close', r));
  const left = warmLeft(f);
  assert.ok(left.containers.length >= 1, 'the killed runner left its warm gateway');
  const next = await execPipeline(f, await writePipeline(f, pipeline(step('after'), 'warm-next'), 'next.yaml'), ['--warm', '1']);
  assert.equal(next.code, 0, next.stderr);
  // the dead runner's step and its own gateway are a run's, recovered as runs are; its warm ones are the pool's
  const still = warmLeft(f);
  assert.deepEqual(still.networks.filter((n) => left.networks.includes(n)), [], 'its networks went');
  assert.deepEqual(still.containers.filter((c) => left.containers.includes(c)), [], 'its containers went');
});

test('runner serve --warm 1: /metrics and /api/warm (the dashboard reads it) say how many are warm; a triggered run takes one, the pool makes another; none is left at the stop', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'warm.yaml': pipeline(step('served'), 'served', f.project) }, '127.0.0.1:0', { args: ['--warm', '1'] });
  try {
    const warm = async () => Number(/^runner_warm_gateways (\d+)$/m.exec(await (await fetch(`${s.base}/metrics`)).text())?.[1]);
    await until('one warm gateway', async () => ((await warm()) === 1 ? true : undefined), 60_000);
    assert.deepEqual(await (await fetch(`${s.base}/api/warm`)).json(), { gateways: 1, containers: 0, size: 1 }, 'the dashboard reads it here (no step has taught the pool its container\'s shape yet)');
    // another process of the home (runner runs) reads it from the pool's status file
    await until('runner runs to say it', async () => {
      const ls = await runCli(['runs', 'ls', '--home', f.home]);
      return /^1 of 1 step gateway warm, each made ahead for one step alone \(runner serve --warm 1, pid \d+: 1 ready, 0 with the step's container made too\)$/m.test(ls.stdout) ? true : undefined;
    }, 30_000);
    const res = await fetch(`${s.base}/api/pipelines/served/runs`, { method: 'POST' });
    assert.equal(res.status, 202);
    const { runId } = (await res.json()) as { runId: string };
    await until('the run to end', async () => {
      const run = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string };
      return ['queued', 'starting', 'running'].includes(run.status) ? undefined : run.status;
    }, 120_000);
    assert.match(await logOf(f, runId, 'served'), /a warm one/);
    await until('the pool to make another', async () => ((await warm()) === 1 ? true : undefined), 60_000);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  const after = await runCli(['runs', 'ls', '--home', f.home]);
  assert.doesNotMatch(after.stdout, /warm/, 'a stopped serve keeps none, and says none');
});

test('runner serve --warm 1 that cannot listen (its port taken) ends with its error and leaves no warm gateway', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const busy = net.createServer();
  await new Promise<void>((r) => busy.listen(0, '127.0.0.1', () => r()));
  const port = (busy.address() as net.AddressInfo).port;
  try {
    const dir = path.join(f.root, 'pipelines-busy');
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'warm.yaml'), pipeline(step('never'), 'never', f.project));
    const s = spawnServe(['--pipelines', dir, '--home', f.home, '--grace', '2s', '--listen', `127.0.0.1:${port}`, '--warm', '1']);
    const code = await s.exited;
    assert.notEqual(code, 0, s.out());
    assert.match(s.out(), /EADDRINUSE|in use/i, s.out());
  } finally {
    busy.close();
  }
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] }, 'the pool it made is removed with it');
});

test('a warm gateway the engine removed while it waited is never handed: the next step still runs (on one made after it), and the pool is whole again', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'warm.yaml': pipeline(step('after-removal'), 'after-removal', f.project) }, '127.0.0.1:0', { args: ['--warm', '1'] });
  try {
    const warm = async () => Number(/^runner_warm_gateways (\d+)$/m.exec(await (await fetch(`${s.base}/metrics`)).text())?.[1]);
    await until('one warm gateway', async () => ((await warm()) === 1 ? true : undefined), 60_000);
    const [held] = warmLeft(f).containers;
    assert.ok(held);
    // someone (an engine's prune, a restart, an operator) removes it under the pool
    execFileSync('docker', ['rm', '-f', held], { stdio: 'ignore' });
    const res = await fetch(`${s.base}/api/pipelines/after-removal/runs`, { method: 'POST' });
    assert.equal(res.status, 202);
    const { runId } = (await res.json()) as { runId: string };
    const status = await until('the run to end', async () => {
      const run = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string };
      return ['queued', 'starting', 'running'].includes(run.status) ? undefined : run.status;
    }, 120_000);
    const log = await logOf(f, runId, 'after-removal');
    assert.equal(status, 'succeeded', log);
    assert.match(log, /ns=/);
    assert.ok(!warmLeft(f).containers.includes(held), 'the removed one is not back');
    await until('the pool to be whole again', async () => ((await warm()) === 1 ? true : undefined), 60_000);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] }, 'its network too is gone');
});

test('a runner killed with -9 while a step ran on a warm gateway: the next runner of its home, even without --warm, leaves none of them (the taken one held its step\'s config)', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline(step('slow', '      sleep 60\n')));
  const child = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home, '--warm', '1'], { env: { ...process.env, CI: 'true' }, stdio: 'ignore' });
  await until('the pool to refill while the step runs', async () => (warmLeft(f).containers.length >= 2 ? true : undefined), 60_000);
  child.kill('SIGKILL');
  await new Promise((r) => child.on('close', r));
  const left = warmLeft(f);
  const next = await execPipeline(f, await writePipeline(f, pipeline(step('after'), 'cold-next'), 'next.yaml'));
  assert.equal(next.code, 0, next.stderr);
  const still = warmLeft(f);
  assert.deepEqual(still.containers.filter((c) => left.containers.includes(c)), [], `its containers went\n${next.stderr}`);
  assert.deepEqual(still.networks.filter((n) => left.networks.includes(n)), [], 'its networks went');
});

test('runner exec --warm 2 stopped with Ctrl-C while its step runs on a warm gateway: the run is cancelled and nothing of the pool is left', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline(step('slow', '      sleep 60\n')));
  const child = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home, '--warm', '2'], { env: { ...process.env, CI: 'true' }, stdio: 'ignore' });
  await until('the pool to refill while the step runs', async () => (warmLeft(f).containers.length >= 3 ? true : undefined), 60_000);
  child.kill('SIGINT');
  const code = await new Promise((r) => child.on('close', r));
  assert.notEqual(code, 0);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});
