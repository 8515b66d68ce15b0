import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { dockerfileBases, dockerfileSources } from '../../../src/container/devcontainer/dockerfile-sources.js';

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

describe('dockerfileBases', () => {
  it('lists the images built FROM, not scratch, earlier stages or ARG-named ones', () => {
    const text = ['ARG V=1', 'FROM --platform=linux/amd64 registry.example/base:1 AS build', 'FROM build', 'FROM scratch', 'FROM node:${V}', 'FROM runner/base:latest'].join('\n');
    assert.deepEqual(dockerfileBases(text), ['registry.example/base:1', 'runner/base:latest']);
  });
});
