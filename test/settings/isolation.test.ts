/** --isolation, else RUNNER_ISOLATION, else left to the file. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { readIsolation } from '../../src/settings/isolation.js';

const cases: Array<[string, string | undefined, NodeJS.ProcessEnv, string | undefined | RegExp]> = [
  ['the flag wins over the variable', 'gvisor', { RUNNER_ISOLATION: 'runc' }, 'gvisor'],
  ['the variable alone', undefined, { RUNNER_ISOLATION: 'gvisor' }, 'gvisor'],
  ['an empty variable is none', undefined, { RUNNER_ISOLATION: '' }, undefined],
  ['neither: left to the file', undefined, {}, undefined],
  ['a flag it does not know', 'kata', {}, /--isolation takes runc or gvisor, got "kata"/],
  ['a variable it does not know (case counts)', undefined, { RUNNER_ISOLATION: 'GVISOR' }, /RUNNER_ISOLATION takes runc or gvisor/],
];

for (const [name, flag, env, want] of cases) {
  test(`isolation: ${name}`, () => {
    if (want instanceof RegExp) assert.throws(() => readIsolation(flag, env), want);
    else assert.equal(readIsolation(flag, env), want);
  });
}
