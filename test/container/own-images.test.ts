import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { isOwnImage, normalizedRepository, OWN_IMAGE_TARGETS, ownImageMissing } from '../../src/container/own-images.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

test('a reference as the engine normalizes it', () => {
  const cases: Array<[string, string]> = [
    ['runner/base:latest', 'docker.io/runner/base'],
    ['runner/base', 'docker.io/runner/base'],
    ['docker.io/runner/claude-code:latest', 'docker.io/runner/claude-code'],
    ['index.docker.io/runner/codex', 'docker.io/runner/codex'],
    [`runner/base@sha256:${'a'.repeat(64)}`, 'docker.io/runner/base'],
    [`runner/base:latest@sha256:${'a'.repeat(64)}`, 'docker.io/runner/base'],
    ['alpine', 'docker.io/library/alpine'],
    ['alpine:3.20', 'docker.io/library/alpine'],
    ['ghcr.io/runner/base:1', 'ghcr.io/runner/base'],
    ['localhost/runner/base', 'localhost/runner/base'],
    ['127.0.0.1:5000/runner/base:1', '127.0.0.1:5000/runner/base'],
    ['Runner/base', 'Runner/base'],
  ];
  for (const [ref, want] of cases) assert.equal(normalizedRepository(ref), want, ref);
});

test("the runner's own: every name the engine would look for under docker.io/runner/, nothing else", () => {
  for (const ref of ['runner/base:latest', 'runner/never-built-x:latest', 'docker.io/runner/claude-code', 'index.docker.io/runner/gateway:latest', 'runner/a/b']) {
    assert.equal(isOwnImage(ref), true, ref);
  }
  for (const ref of ['alpine', 'library/runner', 'runners/base', 'ghcr.io/runner/base', 'localhost:5000/runner/base', 'my-runner/base', 'runner']) {
    assert.equal(isOwnImage(ref), false, ref);
  }
});

test('a missing one is said with the command that builds it, where', () => {
  assert.equal(
    ownImageMissing('runner/claude-code:latest', '/opt/src/runner'),
    "image runner/claude-code:latest is missing: the runner's own images (runner/*) are built from its recipes and never pulled from a registry, where anyone may own the name: build it with `make images` in /opt/src/runner",
  );
  assert.match(ownImageMissing('docker.io/runner/runner:latest', '/r'), /build it with `make runner-image` in \/r$/);
  assert.match(ownImageMissing('runner/base:latest', undefined), /`make images` in the runner's source directory, on the machine whose engine this is$/);
  assert.match(ownImageMissing('runner/nope:1', '/r'), /^image runner\/nope:1 is missing, and no recipe of this runner builds it: .*`make images` in \/r builds runner\/base, runner\/toolchain, runner\/gateway, runner\/claude-code, runner\/codex, runner\/opencode; use one of those, or give your own image a name outside runner\/$/);
});

test('every image the recipes build is listed, with the target that builds it', () => {
  const built = [...readFileSync(path.join(ROOT, 'images/build.sh'), 'utf8').matchAll(/^build (\S+) /gm)].map((m) => `runner/${m[1]}`);
  assert.ok(built.length >= 5);
  for (const image of ['runner/base', ...built]) assert.equal(OWN_IMAGE_TARGETS[image], 'make images', image);
  assert.match(readFileSync(path.join(ROOT, 'images/runner/build.sh'), 'utf8'), /runner\/runner:latest/);
  assert.equal(OWN_IMAGE_TARGETS['runner/runner'], 'make runner-image');
});
