/**
 * The CLI's bundle (scripts/bundle.mjs): what dockerode loads only for BuildKit sessions (gRPC, protobufjs) and
 * ssh:// engines (ssh2) is not in it, so no runner start parses it; and it is still there when used, required from
 * node_modules by the runner's root.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chown, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CLI } from '../fixtures/project.js';

test('gRPC, protobufjs and ssh2 are not bundled', async () => {
  const dir = path.dirname(CLI);
  const maps = (await readdir(dir)).filter((n) => n.endsWith('.js.map'));
  assert.ok(maps.length > 3, 'the bundle has its source maps');
  for (const m of maps) {
    const { sources } = JSON.parse(await readFile(path.join(dir, m), 'utf8')) as { sources: string[] };
    const heavy = sources.filter((s) => /node_modules\/(@grpc|protobufjs|@protobufjs|ssh2)\//.test(s));
    assert.deepEqual(heavy, [], `${m} bundles ${heavy.slice(0, 3).join(', ')}`);
  }
});

test('an ssh:// engine still loads ssh2 when used: runner says the engine is not reachable there, not that a module is missing', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-bundle-'));
  try {
    await mkdir(path.join(dir, 'data'));
    await chown(path.join(dir, 'data'), 65532, 65532);
    await writeFile(path.join(dir, 'p.yaml'), 'version: 1\nname: ssh\nproject: { path: data, workspace: persistent_directory }\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: "true"\n');
    // port 1 of loopback: nothing listens, the ssh client (ssh2) is refused at once
    const r = spawnSync(process.execPath, [CLI, 'exec', path.join(dir, 'p.yaml'), '--home', path.join(dir, 'home')], { env: { ...process.env, DOCKER_HOST: 'ssh://nobody@127.0.0.1:1' }, encoding: 'utf8', timeout: 60_000 });
    const said = r.stdout + r.stderr;
    assert.doesNotMatch(said, /Cannot find module/);
    assert.match(said, /docker is not reachable at ssh:\/\/nobody@127\.0\.0\.1:1 \(ECONNREFUSED\)/);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
