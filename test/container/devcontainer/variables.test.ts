import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { resolveVariables } from '../../../src/container/devcontainer/variables.js';

const ctx = { workspace: '/home/agent/run-workspace', projectName: 'proj', containerEnv: { A: 'a' }, devcontainerId: 'id1' };

describe('resolveVariables', () => {
  it('points the workspace variables at the runner’s workspace', () => {
    assert.equal(resolveVariables('${containerWorkspaceFolder}/x', ctx), '/home/agent/run-workspace/x');
    assert.equal(resolveVariables('${localWorkspaceFolder}', ctx), '/home/agent/run-workspace');
    assert.equal(resolveVariables('${containerWorkspaceFolderBasename}', ctx), 'run-workspace');
    assert.equal(resolveVariables('${localWorkspaceFolderBasename}', ctx), 'proj');
    assert.equal(resolveVariables('${devcontainerId}', ctx), 'id1');
  });

  it('never reads the runner’s own environment for localEnv: only the default written', () => {
    process.env.RUNNER_TEST_SECRET_VAR = 'leak';
    try {
      assert.equal(resolveVariables('${localEnv:RUNNER_TEST_SECRET_VAR}', ctx), '');
      assert.equal(resolveVariables('${localEnv:RUNNER_TEST_SECRET_VAR:dflt}', ctx), 'dflt');
      // each one made empty is told, to be said: a default written is not
      const emptied: string[] = [];
      resolveVariables('${localEnv:RUNNER_TEST_SECRET_VAR}/${env:B}/${localEnv:C:c}', ctx, undefined, (v) => emptied.push(v));
      assert.deepEqual(emptied, ['${localEnv:RUNNER_TEST_SECRET_VAR}', '${env:B}']);
    } finally {
      delete process.env.RUNNER_TEST_SECRET_VAR;
    }
  });

  it('takes containerEnv, and leaves unknown variables as written, saying which', () => {
    assert.equal(resolveVariables('${containerEnv:A}-${containerEnv:B:z}', ctx), 'a-z');
    const unknown: string[] = [];
    assert.equal(resolveVariables('${foo}', ctx, (v) => unknown.push(v)), '${foo}');
    assert.deepEqual(unknown, ['${foo}']);
  });
});
