import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { featureEnv, featuresDockerfile, optionVariable } from '../../../src/container/devcontainer/features.js';

describe('local features', () => {
  it('names option variables as the spec does, the file’s values over the defaults', () => {
    assert.equal(optionVariable('version'), 'VERSION');
    assert.equal(optionVariable('install-tools'), 'INSTALL_TOOLS');
    assert.deepEqual(featureEnv({ options: { version: { default: '1' }, flag: { default: false } } }, { version: '2' }), { VERSION: '2', FLAG: 'false' });
  });

  it('installs each feature as root in order, and gives the image its user back', () => {
    const text = featuresDockerfile('base:1', [{ id: './features/a', dir: 'features/a', env: {}, containerEnv: { TOOL_HOME: '/opt/a' } }], 'dev', { remote: 'dev', container: 'dev' }, '/home/agent');
    const lines = text.trim().split('\n');
    assert.equal(lines[0], 'FROM base:1');
    assert.equal(lines[1], 'USER root');
    assert.match(lines[2]!, /^COPY features\/a\/ \/tmp\/runner-features\/0\/$/);
    assert.match(lines[3]!, /\.\/install\.sh$/);
    assert.equal(lines[4], 'ENV TOOL_HOME="/opt/a"');
    assert.equal(lines.at(-1), 'USER dev');
  });

  it("makes the steps' HOME writable by all, with no feature too (a real dev container image has no /home/agent)", () => {
    const lines = featuresDockerfile('base:1', [], 'node', { remote: 'node', container: 'node' }, '/home/agent').trim().split('\n');
    assert.deepEqual(lines, ['FROM base:1', 'USER root', "RUN mkdir -p '/home/agent' && chmod 1777 '/home/agent'", 'USER node']);
  });
});
