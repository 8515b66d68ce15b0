/**
 * The runner's own images (runner/*) are never pulled from a registry, where
 * anyone may own the name: a missing one refuses the run, before anything
 * starts, with the command that builds it. Played with the engine's API
 * watched: a proxy on a socket of the test's own records every request the
 * real CLI sends to the real engine. Other images are still pulled, and the
 * pull is said on the console.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startDockerProxy, type DockerProxy } from '../fixtures/docker-proxy.js';
import { pipelineYaml, projectsForThisFile, runCli, serveFolder, until, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
/** the runner's directory (its Makefile), which the refusal names */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const rand = () => randomBytes(4).toString('hex');

let proxy: DockerProxy;
before(async () => {
  proxy = await startDockerProxy();
});
after(() => proxy.close());

const pulls = (from: number) => proxy.requests().slice(from).filter((r) => /^POST \/(v[\d.]+\/)?images\/create\b/.test(r));

test('a runner/* image no one built: runner exec refuses before anything starts, names the command that builds it, and asks no registry', async () => {
  const f = await fixture();
  const image = `runner/never-built-${rand()}:latest`;
  const file = await writePipeline(f, pipelineYaml(`  - id: a\n    image: ${image}\n    run: "true"\n`));
  const from = proxy.requests().length;
  const r = await runCli(['exec', file, '--home', f.home], { env: { DOCKER_HOST: proxy.host } });
  assert.deepEqual(pulls(from), [], 'no pull was asked of the engine');
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, new RegExp(`image ${image} is missing, and no recipe of this runner builds it: the runner's own images \\(runner/\\*\\) are built from its recipes and never pulled from a registry`));
  assert.ok(r.stderr.includes(`\`make images\` in ${ROOT} builds runner/base, runner/toolchain`), r.stderr);
  const seen = proxy.requests().slice(from);
  assert.ok(seen.some((q) => q.includes(`/images/${image.replace('/', '%2F')}/json`) || q.includes(`/images/${image}/json`)), `the engine was asked whether it has the image:\n${seen.join('\n')}`);
  assert.equal(existsSync(path.join(f.home, 'runs')), false, 'no run was recorded');
  assert.equal(existsSync(path.join(f.home, 'worktrees')), false, 'no worktree was made');
});

test('the same name written as Docker Hub spells it (docker.io/runner/…) is refused too', async () => {
  const f = await fixture();
  const image = `docker.io/runner/never-built-${rand()}:1`;
  const file = await writePipeline(f, pipelineYaml(`  - id: a\n    image: ${image}\n    run: "true"\n`));
  const from = proxy.requests().length;
  const r = await runCli(['exec', file, '--home', f.home, '--json'], { env: { DOCKER_HOST: proxy.host } });
  assert.deepEqual(pulls(from), [], 'no pull was asked of the engine');
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.json.error.code, 'image_missing');
  assert.match(r.json.error.message, /never pulled from a registry/);
});

test('another missing image is still pulled: the pull is said on the console, seen by the engine, and its failure says what to do', async () => {
  const f = await fixture();
  // a registry on this machine's discard port: nothing listens, so the pull fails at once, as any unreachable registry would
  const image = `127.0.0.1:9/runner-test/missing-${rand()}:1`;
  const file = await writePipeline(f, pipelineYaml(`  - id: a\n    image: ${image}\n    run: "true"\n`));
  const from = proxy.requests().length;
  const r = await runCli(['exec', file, '--home', f.home], { env: { DOCKER_HOST: proxy.host } });
  assert.equal(r.code, 3, r.stderr);
  assert.ok(r.stderr.includes(`runner: pulling ${image} from its registry: not on this engine, asking its registry\n`), r.stderr);
  assert.ok(r.stderr.includes(`image ${image} is not present locally and could not be pulled from its registry (`), r.stderr);
  assert.match(r.stderr, /connection refused|connect/);
  assert.match(r.stderr, /build it here \(docker build -t .*\), or pull it where its registry is reachable and load it here/);
  const asked = pulls(from);
  assert.equal(asked.length, 1, asked.join('\n'));
  assert.match(decodeURIComponent(asked[0]!), new RegExp(`fromImage=${image.split(':1')[0]!.replace(/[.]/g, '\\.')}`));
});

test('runner validate warns that a missing runner/* image will not be pulled, with the command that builds it', async () => {
  const f = await fixture();
  const image = `runner/never-built-${rand()}:latest`;
  const file = await writePipeline(f, pipelineYaml(`  - id: a\n    image: ${image}\n    run: "true"\n`));
  const from = proxy.requests().length;
  const r = await runCli(['validate', file], { env: { DOCKER_HOST: proxy.host } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, new RegExp(`warning: image ${image} is missing, and no recipe of this runner builds it: .*never pulled.*\`make images\` in ${ROOT.replace(/[.]/g, '\\.')}`));
  assert.deepEqual(pulls(from), []);
});

test('runner serve: a run on a runner/* image no one built does not start, says why, and asks no registry', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const image = `runner/never-built-${rand()}:latest`;
  const from = proxy.requests().length;
  const s = await serveFolder(
    f,
    { 'nobuilt.yaml': `version: 1\nname: nobuilt\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${image} }\nsteps:\n  - id: s\n    run: "true"\n` },
    '127.0.0.1:0',
    { env: { DOCKER_HOST: proxy.host } },
  );
  try {
    const res = await fetch(`${s.base}/api/pipelines/nobuilt/runs`, { method: 'POST' });
    assert.equal(res.status, 202);
    const { runId } = (await res.json()) as { runId: string };
    const rec = await until('the run to be marked', async () => {
      const r = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string; error?: { code: string; message: string } };
      return r.status === 'not_started' ? r : undefined;
    });
    assert.deepEqual(pulls(from), [], 'no pull was asked of the engine');
    assert.equal(rec.error?.code, 'image_missing');
    assert.match(rec.error!.message, /never pulled from a registry.*`make images`/);
    await s.waitFor(new RegExp(`run ${runId} could not start: image ${image} is missing`), 10_000);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
