import assert from 'node:assert/strict';
import { test } from 'node:test';
import { imageRefProblem } from '../../src/pipeline/image-ref.js';

test('image references the engine takes are accepted, as is devcontainer', () => {
  for (const ok of [
    'devcontainer',
    'alpine',
    'runner/base:latest',
    'node:20-bookworm',
    'registry.company.example/tools/lint:3',
    '127.0.0.1:5000/runner/base:latest',
    'localhost:5000/a/b_c/d-e.f:v1.2',
    `ghcr.io/acme/app@sha256:${'a'.repeat(64)}`,
    `ghcr.io/acme/app:1.0@sha256:${'b'.repeat(64)}`,
    'Registry.Example:443/x',
  ]) assert.equal(imageRefProblem(ok), undefined, ok);
});

test('URLs, upper case paths, spaces and other non-references are refused, saying what to write', () => {
  assert.match(imageRefProblem('https://images.example/x')!, /is a URL, not an image name/);
  assert.match(imageRefProblem('http://127.0.0.1:5000/x')!, /URL/);
  for (const bad of ['Runner/Base', 'a b', 'a/', '/a', 'a//b', 'a:', 'a@sha256:12', '-a', 'a/../b', 'x:tag with space', 'a:b:c', '']) {
    assert.match(imageRefProblem(bad) ?? '', /not an image name/, bad);
  }
  assert.match(imageRefProblem(`a/${'b'.repeat(300)}`)!, /at most 255/);
});
