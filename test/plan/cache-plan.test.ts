import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { DEFAULT_CACHE_MAX_BYTES } from '../../src/cache/ecosystems.js';
import { cacheEnv, planCaches } from '../../src/plan/cache-plan.js';
import { planSteps } from '../../src/plan/step-plan.js';

test('each known cache is mounted under /var/cache/runner with the tool\'s own setting', () => {
  const cases: Array<[string, Record<string, string>]> = [
    ['npm', { npm_config_cache: '/var/cache/runner/npm' }],
    ['pip', { PIP_CACHE_DIR: '/var/cache/runner/pip' }],
    ['pnpm', { npm_config_store_dir: '/var/cache/runner/pnpm' }],
    ['yarn', { YARN_CACHE_FOLDER: '/var/cache/runner/yarn', YARN_GLOBAL_FOLDER: '/var/cache/runner/yarn/berry' }],
  ];
  for (const [name, env] of cases) {
    const [c] = planCaches({ [name]: { readOnly: false } });
    assert.deepEqual(c, { name, target: `/var/cache/runner/${name}`, env, readOnly: false, maxBytes: DEFAULT_CACHE_MAX_BYTES });
  }
  const [own] = planCaches({ maven: { readOnly: true, path: '/home/agent/.m2/repository', max: 5 } });
  assert.deepEqual(own, { name: 'maven', target: '/home/agent/.m2/repository', env: {}, readOnly: true, maxBytes: 5 });
  // a known cache moved: its setting follows it
  assert.deepEqual(planCaches({ npm: { readOnly: false, path: '/home/agent/.npm' } })[0]!.env, { npm_config_cache: '/home/agent/.npm' });
  assert.deepEqual(cacheEnv(planCaches({ npm: { readOnly: false }, pip: { readOnly: true } })), { npm_config_cache: '/var/cache/runner/npm', PIP_CACHE_DIR: '/var/cache/runner/pip' });
});

test('the nearest of step, agent and defaults that says cache: decides, whole', () => {
  const p = parsePipeline(
    `version: 1
name: p
defaults: { image: base, cache: [npm, pip] }
agents:
  a: { command: [x], cache: { npm: ro } }
steps:
  - id: plain
    run: "true"
  - id: agent
    agent: a
  - id: own
    agent: a
    cache: { yarn: { max: 1g } }
  - id: none
    run: "true"
    cache: []
`,
    'x.yaml',
  );
  const got = Object.fromEntries(planSteps(p).map((s) => [s.id, s.caches.map((c) => `${c.name}${c.readOnly ? ':ro' : ''}`)]));
  assert.deepEqual(got, { plain: ['npm', 'pip'], agent: ['npm:ro'], own: ['yarn'], none: [] });
  assert.equal(planSteps(p)[2]!.caches[0]!.maxBytes, 1024 ** 3);
});
