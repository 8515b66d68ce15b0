/** --engine, else RUNNER_ENGINE, else local; --registry, else RUNNER_REGISTRY (and whether it came from the flag). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readEngine, type EngineSettings } from '../../src/settings/engine.js';

const cases: Array<[string, { engine?: string; registry?: string }, NodeJS.ProcessEnv, EngineSettings | RegExp]> = [
  ['nothing set: the local engine', {}, {}, { name: 'local', registryFromFlag: false }],
  ['the variable', {}, { RUNNER_ENGINE: 'swarm' }, { name: 'swarm', registryFromFlag: false }],
  ['the flag wins', { engine: 'local' }, { RUNNER_ENGINE: 'swarm' }, { name: 'local', registryFromFlag: false }],
  ['a registry from the flag', { engine: 'swarm', registry: 'reg.lab:5000' }, {}, { name: 'swarm', registry: 'reg.lab:5000', registryFromFlag: true }],
  ['a registry from the variable', {}, { RUNNER_ENGINE: 'swarm', RUNNER_REGISTRY: 'reg.lab:5000' }, { name: 'swarm', registry: 'reg.lab:5000', registryFromFlag: false }],
  ['podman, by the flag', { engine: 'podman' }, {}, { name: 'podman', registryFromFlag: false }],
  ['podman, by the variable', {}, { RUNNER_ENGINE: 'podman' }, { name: 'podman', registryFromFlag: false }],
  ['an engine it does not know (flag)', { engine: 'k8s' }, {}, /--engine takes local, swarm or podman, got "k8s"/],
  ['an engine it does not know (variable)', {}, { RUNNER_ENGINE: 'nomad' }, /RUNNER_ENGINE takes local, swarm or podman, got "nomad"/],
];

for (const [name, flags, env, want] of cases) {
  test(`engine: ${name}`, () => {
    if (want instanceof RegExp) assert.throws(() => readEngine(flags, env), want);
    else assert.deepEqual(readEngine(flags, env), want);
  });
}
