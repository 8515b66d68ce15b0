import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { readDevcontainerConfig } from '../../../src/container/devcontainer/config.js';
import { preparationScript } from '../../../src/container/devcontainer/script.js';

describe('preparationScript', () => {
  it('runs the three commands in the spec’s order, each form as written, quoting argv as data', () => {
    const c = readDevcontainerConfig(`{ "image": "x",
      "postCreateCommand": { "p": ["printf", "%s\\n", "$HOME';x"] },
      "onCreateCommand": "echo on-create",
      "updateContentCommand": ["echo", "update"] }`).config!;
    const script = preparationScript(c)!;
    const out = execFileSync('/bin/sh', ['-c', script], { encoding: 'utf8' });
    assert.equal(out, "▶ onCreateCommand\non-create\n▶ updateContentCommand\nupdate\n▶ postCreateCommand p\n$HOME';x\n");
  });

  it('stops at the first command that fails, naming it', () => {
    const c = readDevcontainerConfig('{ "image": "x", "onCreateCommand": "exit 3", "postCreateCommand": "echo never" }').config!;
    let err: { status?: number; stdout?: string; stderr?: string } = {};
    try {
      execFileSync('/bin/sh', ['-c', preparationScript(c)!], { encoding: 'utf8', stdio: 'pipe' });
    } catch (e) {
      err = e as typeof err;
    }
    assert.equal(err.status, 1);
    assert.doesNotMatch(err.stdout ?? '', /never/);
    assert.match(err.stderr ?? '', /onCreateCommand failed/);
  });

  it('is undefined without a preparing command', () => {
    assert.equal(preparationScript(readDevcontainerConfig('{ "image": "x" }').config!), undefined);
  });
});
