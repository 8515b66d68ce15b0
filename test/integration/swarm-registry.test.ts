/**
 * Images from a registry on the 3-node lab (scripts/swarm-lab.sh, which also
 * starts a registry at the manager's lab address): `runner images push` puts
 * runner/base there, and a swarm run with --registry has a worker that never
 * had the image pull exactly this engine's image by digest. The lab is
 * brought up for this file with no image loaded into its workers, and taken
 * down after it; the registry's tags this file made on the host's engine go
 * with it (the images keep their runner/* names).
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { execPipeline, git, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const LAB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/swarm-lab.sh');
const run = promisify(execFile);
const fixture = projectsForThisFile();
const REGISTRY = '10.213.7.1:5000';
const SWARM = ['--engine', 'swarm', '--registry', REGISTRY];
const worker = (name: string, ...args: string[]) => execFileSync('docker', ['-H', `unix:///run/runner-swarm-lab/${name}.sock`, ...args], { encoding: 'utf8' }).trim();
const inspectId = (ref: string, engine: string[] = []) => execFileSync('docker', [...engine, 'image', 'inspect', '-f', '{{.Id}}', ref], { encoding: 'utf8' }).trim();
const services = () => execFileSync('docker', ['service', 'ls', '-q', '--filter', 'label=dev.runner.run-id'], { encoding: 'utf8' }).trim();

before(async () => {
  await run('bash', [LAB, 'up'], { env: { ...process.env, LAB_IMAGES: 'none' }, maxBuffer: 1 << 24 });
}, { timeout: 600_000 });
after(async () => {
  // the tags `runner images push` (and this file) made on the host's engine for the lab's registry
  const tags = execFileSync('docker', ['image', 'ls', '--format', '{{.Repository}}:{{.Tag}}', `${REGISTRY}/runner/*`], { encoding: 'utf8' }).split('\n').filter(Boolean);
  if (tags.length) execFileSync('docker', ['image', 'rm', '--no-prune', ...tags]);
  await run('bash', [LAB, 'down'], { maxBuffer: 1 << 24 });
}, { timeout: 300_000 });

const onWorker = (hostname: string, image = 'runner/base:latest') => `version: 1
name: pulled
project: { path: project, push: never }
steps:
  - id: here
    image: ${image}
    placement: ["node.hostname == ${hostname}"]
    resources: { memory: 128m, cpus: 0.2, pids: 64 }
    timeout: 3m
    run: echo "ran in $(hostname)" > where.txt
`;

let pushed: { image: string; digest: string; pinned: string; tags: string[]; id: string } | undefined;

test('runner images push puts runner/base in the lab\'s registry with its tag, reports progress, prints its digest; the engine recorded it', { timeout: 300_000 }, async () => {
  assert.throws(() => worker('lab-w1', 'image', 'inspect', 'runner/base:latest'), 'lab-w1 never had runner/base');
  const t0 = Date.now();
  const r = await runCli(['images', 'push', '--registry', REGISTRY, 'runner/base:latest', '--json']);
  const seconds = (Date.now() - t0) / 1000;
  assert.equal(r.code, 0, r.stderr);
  console.log(`images push: runner/base:latest (${(Number(execFileSync('docker', ['image', 'inspect', '-f', '{{.Size}}', 'runner/base:latest'], { encoding: 'utf8' })) / 1e6).toFixed(0)} MB) to an empty registry in ${seconds.toFixed(1)} s`);
  assert.match(r.stderr, new RegExp(`pushing runner/base:latest to ${REGISTRY}/runner/base:latest`));
  const [one] = JSON.parse(r.stdout) as Array<NonNullable<typeof pushed>>;
  pushed = one!;
  assert.equal(pushed.image, 'runner/base:latest');
  assert.equal(pushed.id, inspectId('runner/base:latest'));
  assert.deepEqual(pushed.tags, [`${REGISTRY}/runner/base:latest`]);
  assert.match(pushed.digest, /^sha256:[0-9a-f]{64}$/);
  assert.equal(pushed.pinned, `${REGISTRY}/runner/base@${pushed.digest}`);
  // the registry serves that manifest under the tag, over TLS with the lab's CA
  const head = execFileSync('curl', ['-sfI', '--cacert', `/etc/docker/certs.d/${REGISTRY}/ca.crt`, '-H', 'Accept: application/vnd.docker.distribution.manifest.v2+json', `https://${REGISTRY}/v2/runner/base/manifests/latest`], { encoding: 'utf8' });
  assert.match(head, new RegExp(`docker-content-digest: ${pushed.digest}`, 'i'));

  // pushed again, nothing changes: the same digest, every layer already there
  const again = await runCli(['images', 'push', '--registry', REGISTRY, 'runner/base:latest']);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, new RegExp(`runner/base:latest +${REGISTRY}/runner/base:latest +${pushed.digest}`));
});

test('a swarm run with --registry: a worker that never had runner/base pulls exactly this engine\'s image by digest, and the step runs there', { timeout: 300_000 }, async () => {
  assert.ok(pushed, 'the push test ran first');
  const f = await fixture({ owner: 1000 });
  const t0 = Date.now();
  const r = await execPipeline(f, await writePipeline(f, onWorker('lab-w1')), SWARM);
  assert.equal(r.code, 0, r.stderr);
  console.log(`a one-step run on lab-w1, pulling runner/base from the registry: ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  assert.match(git(f.project, 'show', `${r.json.branch}:where.txt`), /^ran in \S+$/);
  const rec = JSON.parse(readFileSync(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  assert.equal(rec.steps[0].node, 'lab-w1');
  // what the worker has is the registry's digest of exactly the manager's image (same ID); it has no runner/base name
  assert.equal(inspectId(pushed.pinned, ['-H', 'unix:///run/runner-swarm-lab/lab-w1.sock']), pushed.id);
  assert.throws(() => worker('lab-w1', 'image', 'inspect', 'runner/base:latest'));
  assert.equal(services(), '');
});

test('an own image not in the registry refuses the run before anything starts, with the command that pushes it; one pushed at another version too', { timeout: 300_000 }, async () => {
  const f = await fixture();
  let r = await execPipeline(f, await writePipeline(f, onWorker('lab-w1', 'runner/toolchain:latest')), SWARM);
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.json.runId, null);
  assert.match(r.stderr, new RegExp(`image runner/toolchain:latest is not in the registry ${REGISTRY}.*runner images push --registry ${REGISTRY} runner/toolchain:latest`));

  // the registry's runner/toolchain:latest is some other image (runner/base here, pushed under that name)
  execFileSync('docker', ['tag', 'runner/base:latest', `${REGISTRY}/runner/toolchain:latest`]);
  execFileSync('docker', ['push', `${REGISTRY}/runner/toolchain:latest`], { stdio: 'ignore' });
  r = await execPipeline(f, await writePipeline(f, onWorker('lab-w1', 'runner/toolchain:latest')), SWARM);
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, new RegExp(`the registry's ${REGISTRY}/runner/toolchain:latest \\(sha256:[0-9a-f]{12}\\) is not this engine's runner/toolchain:latest .*another version.*runner images push --registry ${REGISTRY} runner/toolchain:latest`));
  assert.equal(services(), '');
});

test('a worker that cannot reach the registry: the step fails with the node and the reason, saying what the node needs', { timeout: 300_000 }, async () => {
  assert.ok(pushed, 'the push test ran first');
  // lab-w2 never had runner/base; its way to the registry is cut (in its own namespace, the lab's)
  const ns = ['--net=/run/netns/runner-lab-w2'];
  const rule = ['OUTPUT', '-d', REGISTRY.split(':')[0]!, '-p', 'tcp', '--dport', REGISTRY.split(':')[1]!, '-j', 'REJECT', '--reject-with', 'tcp-reset'];
  execFileSync('nsenter', [...ns, 'iptables', '-I', ...rule]);
  try {
    const f = await fixture();
    const r = await execPipeline(f, await writePipeline(f, onWorker('lab-w2')), SWARM);
    assert.equal(r.code, 1, r.stderr);
    const step = r.json.steps.here;
    assert.equal(step.status, 'failed');
    assert.match(step.message, new RegExp(`rejected on lab-w2: .*pulls it from ${REGISTRY} \\(runner/base:latest pushed there\\): does the node reach ${REGISTRY}`));
    assert.equal(services(), '');
  } finally {
    execFileSync('nsenter', [...ns, 'iptables', '-D', ...rule]);
  }
});
