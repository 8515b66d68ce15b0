/** `runner images push` and `--registry`: what is refused before any engine is asked, and why. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { runCli } from '../fixtures/project.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-images-cli-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const noRegistry = { RUNNER_REGISTRY: '' };

test('images takes push; push needs a registry given as HOST:PORT', async () => {
  let r = await runCli(['images'], { env: noRegistry });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /images: expected push, got nothing/);
  r = await runCli(['images', 'push'], { env: noRegistry });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /--registry HOST:PORT is required \(or RUNNER_REGISTRY\)/);
  r = await runCli(['images', 'push', '--registry', 'http://10.213.7.1:5000'], { env: noRegistry });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /not a URL/);
  r = await runCli(['images', 'push', '--registry', 'registry'], { env: noRegistry });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /give HOST:PORT/);
});

test('--registry goes with --engine swarm: the local engine refuses the flag, and a bad address is refused on swarm', async () => {
  const file = path.join(dir, 'p.yaml');
  writeFileSync(file, 'version: 1\nname: p\nproject: { path: project }\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: "true"\n');
  const home = path.join(dir, 'home');
  let r = await runCli(['exec', file, '--home', home, '--registry', '10.213.7.1:5000'], { env: { RUNNER_ENGINE: '' } });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--registry goes with --engine swarm/);
  r = await runCli(['exec', file, '--home', home, '--engine', 'swarm', '--registry', 'ftp://x'], {});
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /--registry takes HOST:PORT, not a URL/);
});

test('runner --help tells of images push and --registry', async () => {
  const r = await runCli(['--help']);
  assert.match(r.stdout, /runner images push --registry HOST:PORT \[IMAGE\.\.\.\]/);
  assert.match(r.stdout, /--registry HOST:PORT {2}with --engine swarm/);
});
