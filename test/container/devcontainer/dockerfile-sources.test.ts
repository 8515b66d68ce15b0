import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dockerfileSources } from '../../../src/container/devcontainer/dockerfile-sources.js';

describe('dockerfileSources', () => {
  it('lists the context paths COPY and ADD read, not other stages, URLs or heredocs', () => {
    const text = [
      'FROM runner/base:latest AS b',
      'COPY ./tools/hello /usr/local/bin/hello',
      'COPY --chown=1000:1000 a.txt b/ /opt/',
      'COPY --from=b /x /y',
      'ADD https://example.com/x /z',
      'COPY ["spaced name", "/w"]',
      'ADD \\',
      '  scripts/ /s',
    ].join('\n');
    assert.deepEqual(dockerfileSources(text), ['tools/hello', 'a.txt', 'b', 'spaced name', 'scripts']);
    assert.deepEqual(dockerfileSources('COPY . /src'), ['.']);
  });
});
