import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readDevcontainerConfig } from '../../../src/container/devcontainer/config.js';

describe('readDevcontainerConfig', () => {
  it('takes image, env, users, workspaceFolder and the three command forms, with comments and trailing commas', () => {
    const r = readDevcontainerConfig(`{
      // a comment
      "name": "x",
      "image": "runner/base:latest",
      "containerEnv": { "A": "1", },
      "remoteEnv": { "B": "\${containerEnv:A}", "GONE": null },
      "remoteUser": "vscode",
      "containerUser": "root",
      "workspaceFolder": "/workspaces/x",
      "onCreateCommand": "echo one",
      "updateContentCommand": ["make", "deps"],
      "postCreateCommand": { "a": "echo a", "b": ["echo", "b"] },
    }`);
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.warnings, []);
    const c = r.config!;
    assert.equal(c.image, 'runner/base:latest');
    assert.deepEqual(c.containerEnv, { A: '1' });
    assert.deepEqual(c.remoteEnv, { B: '${containerEnv:A}' });
    assert.equal(c.remoteUser, 'vscode');
    assert.equal(c.containerUser, 'root');
    assert.equal(c.workspaceFolder, '/workspaces/x');
    assert.deepEqual(c.lifecycle.onCreateCommand, [{ command: { kind: 'shell', script: 'echo one' } }]);
    assert.deepEqual(c.lifecycle.updateContentCommand, [{ command: { kind: 'argv', argv: ['make', 'deps'] } }]);
    assert.deepEqual(c.lifecycle.postCreateCommand, [
      { name: 'a', command: { kind: 'shell', script: 'echo a' } },
      { name: 'b', command: { kind: 'argv', argv: ['echo', 'b'] } },
    ]);
  });

  it('takes build with dockerfile, context, args and target, and the legacy dockerFile', () => {
    const r = readDevcontainerConfig('{ "build": { "dockerfile": "Dockerfile", "context": "..", "args": { "V": "1" }, "target": "dev" } }');
    assert.deepEqual(r.config?.build, { dockerfile: 'Dockerfile', context: '..', args: { V: '1' }, target: 'dev' });
    const legacy = readDevcontainerConfig('{ "dockerFile": "D" }');
    assert.deepEqual(legacy.config?.build, { dockerfile: 'D', context: '.', args: {} });
  });

  it('refuses what would open the host or the sandbox, each with its line and column', () => {
    const r = readDevcontainerConfig(['{', '  "image": "x",', '  "runArgs": ["--privileged"],', '  "forwardPorts": [3000],', '  "mounts": [],', '  "privileged": true,', '  "capAdd": ["SYS_ADMIN"],', '  "securityOpt": [],', '  "initializeCommand": "rm -rf ~"', '}'].join('\n'));
    assert.equal(r.config, undefined);
    const byKey = Object.fromEntries(r.errors.map((e) => [e.key, e]));
    assert.deepEqual(Object.keys(byKey).sort(), ['capAdd', 'initializeCommand', 'privileged', 'runArgs', 'securityOpt']);
    assert.equal(byKey.runArgs!.line, 3);
    assert.equal(byKey.runArgs!.col, 3);
    assert.match(byKey.runArgs!.message, /^refused: /);
    assert.equal(byKey.initializeCommand!.line, 9);
    assert.match(byKey.initializeCommand!.message, /on the host/);
  });

  it("takes a file as real projects write it: host mounts, a workspace mount and forwarded ports ignored with a warning each, never refused", () => {
    // the shape of a real project's file (comments, a build context above .devcontainer, editor state mounted from the host)
    const text = [
      '{',
      '  // where the editor puts the repository',
      '  "build": { "dockerfile": "Dockerfile", "context": ".." },',
      '  "workspaceMount": "source=${localWorkspaceFolder},target=/src/${localWorkspaceFolderBasename},type=bind",',
      '  "workspaceFolder": "/src/${localWorkspaceFolderBasename}",',
      '  "mounts": [',
      '    // a credential from the host',
      '    "source=${localEnv:HOME}/.config/tool/auth.json,target=/home/dev/.config/tool/auth.json,type=bind,readonly",',
      '  ],',
      '  "forwardPorts": [3000, 9229],',
      '  "appPort": 8080,',
      '  "postCreateCommand": "npm install",',
      '  "customizations": { "vscode": { "extensions": ["x.y"] } },',
      '}',
    ].join('\n');
    const r = readDevcontainerConfig(text);
    assert.deepEqual(r.errors, []);
    assert.deepEqual(r.config?.build, { dockerfile: 'Dockerfile', context: '..', args: {} });
    const byKey = Object.fromEntries(r.warnings.map((w) => [w.key, w]));
    assert.deepEqual(Object.keys(byKey).sort(), ['appPort', 'forwardPorts', 'mounts', 'workspaceMount']);
    assert.equal(byKey.mounts!.line, 6);
    assert.match(byKey.mounts!.message, /^ignored: a step mounts nothing of the host's/);
    assert.match(byKey.workspaceMount!.message, /^ignored: the runner mounts the workspace itself/);
    assert.match(byKey.forwardPorts!.message, /^ignored: a step publishes no port/);
  });

  it('refuses a feature from a registry, naming it, and takes a local one with its options', () => {
    const r = readDevcontainerConfig('{ "image": "x", "features": { "ghcr.io/devcontainers/features/node:1": {}, "./features/tool": { "version": "2", "flag": true } } }');
    assert.equal(r.errors.length, 1);
    assert.equal(r.errors[0]!.key, 'features.ghcr.io/devcontainers/features/node:1');
    assert.match(r.errors[0]!.message, /ghcr\.io\/devcontainers\/features\/node:1 is not a folder of the project/);
    // a feature of the devcontainers collection: where its source is, to copy
    assert.match(r.errors[0]!.message, /its source: https:\/\/github\.com\/devcontainers\/features\/tree\/main\/src\/node;/);
    const other = readDevcontainerConfig('{ "image": "x", "features": { "ghcr.io/devcontainers-community/npm-features/prettier:1": {} } }');
    assert.doesNotMatch(other.errors[0]!.message, /its source/);
    const ok = readDevcontainerConfig('{ "image": "x", "features": { "./features/tool": { "version": "2", "flag": true } } }');
    assert.deepEqual(ok.config?.features, [{ id: './features/tool', options: { version: '2', flag: true } }]);
  });

  it('ignores postStartCommand, postAttachCommand and unknown keys with a warning, and names and customizations silently', () => {
    const r = readDevcontainerConfig('{ "image": "x", "postStartCommand": "a", "postAttachCommand": "b", "frobnicate": 1, "customizations": {}, "name": "n" }');
    assert.ok(r.config);
    assert.deepEqual(r.warnings.map((w) => w.key).sort(), ['frobnicate', 'postAttachCommand', 'postStartCommand']);
    assert.match(r.warnings.find((w) => w.key === 'postStartCommand')!.message, /^ignored: /);
  });

  it('says what is wrong with a file that is no config', () => {
    assert.match(readDevcontainerConfig('{ "image": ').errors[0]!.message, /not valid JSON/);
    assert.match(readDevcontainerConfig('[]').errors[0]!.message, /expected an object/);
    assert.match(readDevcontainerConfig('{}').errors[0]!.message, /no image/);
    assert.match(readDevcontainerConfig('{ "image": "a", "build": { "dockerfile": "D" } }').errors[0]!.message, /either image or build/);
    assert.match(readDevcontainerConfig('{ "image": "a", "postCreateCommand": 3 }').errors[0]!.message, /expected a command/);
    assert.match(readDevcontainerConfig('{ "build": { "dockerfile": "D", "options": ["--network=host"] } }').errors[0]!.message, /refused: docker build options/);
    assert.match(readDevcontainerConfig('{ "image": "a", "containerEnv": { "A B": "x" } }').errors[0]!.message, /variable name/);
  });
});
