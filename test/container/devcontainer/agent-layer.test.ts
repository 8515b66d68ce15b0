import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { agentLayerDockerfile } from '../../../src/container/devcontainer/agent-layer.js';

describe('agentLayerDockerfile', () => {
  it("copies the preset's CLI and the agent image's Node (used only when the project has none), keeps the CLI's settings, and gives the image its user back", () => {
    const text = agentLayerDockerfile('proj:1', 'runner/claude-code:latest', 'claude-code', { PATH: '/x', HOME: '/home/agent', DISABLE_TELEMETRY: '1' }, 'dev');
    const lines = text.trim().split('\n');
    assert.deepEqual(lines.slice(0, 3), ['FROM runner/claude-code:latest AS agent', 'FROM proj:1', 'USER root']);
    assert.ok(lines.includes('COPY --from=agent /usr/local/lib/node_modules/@anthropic-ai /usr/local/lib/node_modules/@anthropic-ai'));
    assert.match(text, /command -v node >\/dev\/null 2>&1 \|\| ln -s \/opt\/runner-agent\/bin\/node \/usr\/local\/bin\/node/);
    assert.match(text, /claude --version/);
    assert.ok(lines.includes('ENV DISABLE_TELEMETRY="1"'), 'PATH and HOME stay the project image\'s');
    assert.equal(lines.at(-1), 'USER dev');
  });

  it('refuses a preset it has no recipe for', () => {
    assert.throws(() => agentLayerDockerfile('p', 'i', 'nope', {}, ''), /no recipe/);
  });
});
