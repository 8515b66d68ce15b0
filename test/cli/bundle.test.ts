/**
 * The CLI's bundle (scripts/bundle.mjs): what dockerode loads only for BuildKit sessions (gRPC, protobufjs) and
 * ssh:// engines (ssh2) is not in it, so no runner start parses it; and it is still there when used, required from
 * node_modules by the runner's root. The start (src/cli/launch.ts) compiles the bundle with V8's code cache: one it
 * can trust is used, and one that is corrupt, someone else's or a link is ignored and the runner works as without.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { lstatSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { CLI } from '../fixtures/project.js';

test('gRPC, protobufjs and ssh2 are not bundled', async () => {
  const dir = path.dirname(CLI);
  const maps = (await readdir(dir)).filter((n) => /\.c?js\.map$/.test(n));
  assert.ok(maps.length >= 1, 'the bundle has its source map');
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

/** runner validate (a command: the bundle is loaded) with the user's cache directory at xdg: what it printed, and the code caches there then. */
async function validate(xdg: string): Promise<{ out: string; caches: string[] }> {
  const file = path.join(xdg, 'p.yaml');
  await writeFile(file, 'version: 1\nname: v\nproject: { path: data, workspace: persistent_directory }\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: "true"\n');
  const r = spawnSync(process.execPath, [CLI, 'validate', file], { env: { ...process.env, XDG_CACHE_HOME: xdg }, encoding: 'utf8', timeout: 30_000 });
  assert.equal(r.status, 0, r.stderr);
  const dir = path.join(xdg, 'runner', 'code-cache');
  const caches = (await readdir(dir).catch(() => [] as string[])).filter((n) => n.endsWith('.bin')).map((n) => path.join(dir, n));
  return { out: r.stdout, caches };
}

const PRINTED = /p\.yaml: ok \(pipeline v, 1 step\)\n$/;

test('runner --version and --help do not load the bundle: no code cache is written for them', async () => {
  const xdg = await mkdtemp(path.join(os.tmpdir(), 'runner-code-cache-'));
  try {
    for (const args of [['--version'], ['--help']]) {
      const r = spawnSync(process.execPath, [CLI, ...args], { env: { ...process.env, XDG_CACHE_HOME: xdg }, encoding: 'utf8', timeout: 30_000 });
      assert.equal(r.status, 0, r.stderr);
    }
    assert.deepEqual(await readdir(xdg), []);
  } finally {
    await rm(xdg, { recursive: true, force: true });
  }
});

test('a start writes the code cache of its command, private to the user, and the next start uses it (not writing it again)', async () => {
  const xdg = await mkdtemp(path.join(os.tmpdir(), 'runner-code-cache-'));
  try {
    const first = await validate(xdg);
    assert.match(first.out, PRINTED);
    assert.equal(first.caches.length, 1);
    const [cache] = first.caches as [string];
    assert.match(path.basename(cache), /^[0-9a-f]{32}-validate\.bin$/);
    assert.equal((await stat(cache)).mode & 0o777, 0o600);
    assert.equal((await stat(path.dirname(cache))).mode & 0o777, 0o700);
    const made = await stat(cache);
    const second = await validate(xdg);
    assert.match(second.out, PRINTED);
    assert.deepEqual(second.caches, [cache]);
    const now = await stat(cache);
    // used, not rewritten: a start that found none, or one V8 rejected, writes a new file (a new inode)
    assert.equal(now.ino, made.ino);
    assert.equal(now.mtimeMs, made.mtimeMs);
  } finally {
    await rm(xdg, { recursive: true, force: true });
  }
});

test('a corrupt or truncated code cache is ignored: the runner works and writes a good one in its place', async () => {
  const xdg = await mkdtemp(path.join(os.tmpdir(), 'runner-code-cache-'));
  try {
    const [cache] = (await validate(xdg)).caches as [string];
    const good = await readFile(cache);
    for (const bad of [Buffer.from('not a code cache'), good.subarray(0, good.length >> 1), Buffer.from(good.map((b, i) => (i > 64 && i % 7 === 0 ? b ^ 0xff : b)))]) {
      await writeFile(cache, bad, { mode: 0o600 });
      const again = await validate(xdg);
      assert.match(again.out, PRINTED);
      assert.deepEqual(again.caches, [cache]);
      assert.notDeepEqual(await readFile(cache), bad, 'the bad cache was replaced');
    }
  } finally {
    await rm(xdg, { recursive: true, force: true });
  }
});

test('a code cache others can write, or a link, is not trusted: the runner works and replaces it with its own file', async () => {
  const xdg = await mkdtemp(path.join(os.tmpdir(), 'runner-code-cache-'));
  try {
    const [cache] = (await validate(xdg)).caches as [string];
    await chmod(cache, 0o666);
    const before = await stat(cache);
    assert.match((await validate(xdg)).out, PRINTED);
    const after = await stat(cache);
    assert.notEqual(after.ino, before.ino, 'rewritten, so it was not read');
    assert.equal(after.mode & 0o777, 0o600);

    const elsewhere = path.join(xdg, 'elsewhere.bin');
    await writeFile(elsewhere, await readFile(cache), { mode: 0o600 });
    await rm(cache);
    await symlink(elsewhere, cache);
    assert.match((await validate(xdg)).out, PRINTED);
    assert.ok((await stat(cache)).isFile() && !lstatSync(cache).isSymbolicLink(), 'the link was replaced by a file');
  } finally {
    await rm(xdg, { recursive: true, force: true });
  }
});

test('a cache directory the runner cannot use (a file there) costs only the cache: the runner works', async () => {
  const xdg = await mkdtemp(path.join(os.tmpdir(), 'runner-code-cache-'));
  try {
    await writeFile(path.join(xdg, 'runner'), 'a file, not a directory');
    const r = await validate(xdg);
    assert.match(r.out, PRINTED);
    assert.deepEqual(r.caches, []);
  } finally {
    await rm(xdg, { recursive: true, force: true });
  }
});
