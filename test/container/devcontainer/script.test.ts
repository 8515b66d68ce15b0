import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { readDevcontainerConfig } from '../../../src/container/devcontainer/config.js';
import { mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { homeHandOver, preparationScript } from '../../../src/container/devcontainer/script.js';

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

describe('homeHandOver', () => {
  it("gives every user what the preparing user left in HOME, but never the workspace nor a link's target", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dc-home-'));
    try {
      const home = path.join(dir, 'home');
      const ws = path.join(home, 'run-workspace');
      mkdirSync(path.join(home, '.npm', '_cacache'), { recursive: true, mode: 0o700 });
      writeFileSync(path.join(home, '.npm', '_cacache', 'index'), 'x', { mode: 0o600 });
      mkdirSync(ws, { mode: 0o700 });
      writeFileSync(path.join(ws, 'node_modules.txt'), 'x', { mode: 0o600 });
      const outside = path.join(dir, 'outside');
      writeFileSync(outside, 'x', { mode: 0o600 });
      symlinkSync(outside, path.join(home, 'link'));
      execFileSync('/bin/sh', ['-c', homeHandOver(home, ws)]);
      const mode = (p: string) => statSync(p).mode & 0o777;
      assert.equal(mode(path.join(home, '.npm')), 0o777);
      assert.equal(mode(path.join(home, '.npm', '_cacache')), 0o777);
      assert.equal(mode(path.join(home, '.npm', '_cacache', 'index')), 0o666);
      assert.equal(mode(ws), 0o700, 'the workspace is left as it is');
      assert.equal(mode(path.join(ws, 'node_modules.txt')), 0o600);
      assert.equal(mode(outside), 0o600, "a link's target is not followed");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
