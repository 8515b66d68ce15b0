/**
 * The code cache's files (src/cli/code-cache.ts): named by what they were made for, read only when the user's own,
 * private and whole, written atomically, the oldest going beyond the few kept.
 */
import assert from 'node:assert/strict';
import { chmod, mkdir, mkdtemp, readdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { cacheDir, cacheKey, cacheName, commandOf, readCache, writeCache } from '../../src/cli/code-cache.js';

async function tmp(): Promise<string> {
  return mkdtemp(path.join(os.tmpdir(), 'runner-code-cache-'));
}

test('the cache directory is the user cache directory (XDG_CACHE_HOME when absolute, else ~/.cache)', () => {
  assert.equal(cacheDir({ XDG_CACHE_HOME: '/x/cache' }), '/x/cache/runner/code-cache');
  assert.equal(cacheDir({ XDG_CACHE_HOME: 'relative' }), path.join(os.homedir(), '.cache', 'runner', 'code-cache'));
  assert.equal(cacheDir({}), path.join(os.homedir(), '.cache', 'runner', 'code-cache'));
});

test('a cache key changes with the bundle, the Node and the flags, and only with them', () => {
  const k = cacheKey('code', 'v20 linux x64', ['--a']);
  assert.match(k, /^[0-9a-f]{32}$/);
  assert.equal(cacheKey(Buffer.from('code'), 'v20 linux x64', ['--a']), k);
  assert.notEqual(cacheKey('code!', 'v20 linux x64', ['--a']), k);
  assert.notEqual(cacheKey('code', 'v22 linux x64', ['--a']), k);
  assert.notEqual(cacheKey('code', 'v20 linux x64', ['--a', '--b']), k);
  assert.notEqual(cacheKey('code', 'v20 linux x64', ['--a', '']), k);
});

test('the command part of a name: the first word, "version" for --version, "help" for CMD --help, "none" for anything else', () => {
  assert.equal(commandOf(['exec', 'p.yaml']), 'exec');
  assert.equal(commandOf(['--version']), 'version');
  assert.equal(commandOf(['-v']), 'version');
  assert.equal(commandOf([]), 'none');
  assert.equal(commandOf(['../x']), 'none');
  assert.equal(commandOf(['--help']), 'none');
  assert.equal(commandOf(['exec', '--help']), 'help');
  assert.equal(commandOf(['exec', '-h']), 'help');
  assert.equal(commandOf(['exec', 'p.yaml', '--help']), 'exec');
  assert.equal(cacheName('abc', 'exec'), 'abc-exec.bin');
});

test('a written cache reads back; one whose bytes changed, or one others could write, does not', async () => {
  const root = await tmp();
  try {
    const dir = path.join(root, 'runner', 'code-cache');
    const data = Buffer.from('bytecode '.repeat(100));
    assert.equal(writeCache(dir, 'k-exec.bin', data), true);
    assert.deepEqual(readCache(dir, 'k-exec.bin'), data);
    assert.equal((await stat(path.join(dir, 'k-exec.bin'))).mode & 0o777, 0o600);
    assert.deepEqual(await readdir(dir), ['k-exec.bin'], 'no temporary file is left');
    assert.equal(readCache(dir, 'k-other.bin'), undefined);

    const file = path.join(dir, 'k-exec.bin');
    const whole = await readFile(file);
    whole.writeUInt8(whole.readUInt8(whole.length - 1) ^ 1, whole.length - 1);
    await writeFile(file, whole);
    assert.equal(readCache(dir, 'k-exec.bin'), undefined, 'a changed byte');
    await writeFile(file, whole.subarray(0, 20));
    assert.equal(readCache(dir, 'k-exec.bin'), undefined, 'shorter than its digest');

    assert.equal(writeCache(dir, 'k-exec.bin', data), true);
    await chmod(file, 0o620);
    assert.equal(readCache(dir, 'k-exec.bin'), undefined, 'a file its group can write');
    await chmod(file, 0o600);
    await chmod(dir, 0o777);
    assert.equal(readCache(dir, 'k-exec.bin'), undefined, 'in a directory others can write');
    assert.equal(writeCache(dir, 'k-exec.bin', data), false, 'nor written there');
  } finally {
    await rm(root, { recursive: true, force: true });
  }
});

test('beyond 48 caches, the oldest go', async () => {
  const dir = path.join(await tmp(), 'code-cache');
  try {
    await mkdir(dir, { mode: 0o700 });
    for (let i = 0; i < 50; i++) {
      await writeFile(path.join(dir, `old${i}-exec.bin`), 'x', { mode: 0o600 });
      await utimes(path.join(dir, `old${i}-exec.bin`), 1000 + i, 1000 + i);
    }
    assert.equal(writeCache(dir, 'new-exec.bin', Buffer.from('y')), true);
    const left = await readdir(dir);
    assert.equal(left.length, 48);
    assert.ok(left.includes('new-exec.bin'));
    assert.ok(!left.includes('old0-exec.bin') && !left.includes('old1-exec.bin') && !left.includes('old2-exec.bin'));
    assert.ok(left.includes('old49-exec.bin'));
  } finally {
    await rm(path.dirname(dir), { recursive: true, force: true });
  }
});
