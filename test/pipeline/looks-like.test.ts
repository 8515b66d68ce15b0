import assert from 'node:assert/strict';
import { test } from 'node:test';
import { looksLikePipeline } from '../../src/pipeline/looks-like.js';

test('a pipeline has a top-level steps: or version: 1; broken YAML of a pipeline is still one', () => {
  assert.equal(looksLikePipeline('version: 1\nname: x\nsteps:\n  - id: a\n    run: true\n'), true);
  assert.equal(looksLikePipeline('name: x\nsteps:\n  - id: a\n'), true, 'version forgotten: still a pipeline, its errors shown');
  assert.equal(looksLikePipeline('version: 1 # the format\nname: x\n'), true, 'steps forgotten: still a pipeline');
  assert.equal(looksLikePipeline("version: '1'\n"), true);
  assert.equal(looksLikePipeline('version: 1\nsteps: [\n  {id: a\n'), true, 'unparsable, but meant as a pipeline');
});

test("other tools' YAML is not a pipeline", () => {
  // a project's root, as init leaves it: runner.yaml beside these
  assert.equal(looksLikePipeline('root: true\nextends:\n  - eslint:recommended\nrules:\n  semi: error\n'), false, '.eslintrc.yml');
  assert.equal(looksLikePipeline('version: "3.8"\nservices:\n  web:\n    image: nginx\n'), false, 'docker-compose.yml');
  assert.equal(looksLikePipeline('repos:\n  - repo: https://github.com/x/y\n    hooks:\n      - id: z\n'), false, '.pre-commit-config.yaml');
  assert.equal(looksLikePipeline('on: push\njobs:\n  build:\n    steps:\n      - run: make\n'), false, 'a GitHub workflow: its steps are not top-level');
  assert.equal(looksLikePipeline('lockfileVersion: 5.4\n'), false, 'pnpm-lock.yaml');
  assert.equal(looksLikePipeline(''), false);
});
