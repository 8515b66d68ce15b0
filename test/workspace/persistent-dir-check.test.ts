import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { WorkspaceError } from '../../src/common/errors.js';
import { checkPersistentDir } from '../../src/workspace/persistent-dir.js';

test("a persistent directory that holds the runner's code cache (bytecode it runs on the host) is refused, saying what to do; one beside it is not", async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'runner-pdir-'));
  const was = process.env.XDG_CACHE_HOME;
  try {
    const home = path.join(root, 'home');
    const other = path.join(root, 'project');
    await mkdir(path.join(home, '.cache'), { recursive: true });
    await mkdir(other);
    process.env.XDG_CACHE_HOME = path.join(home, '.cache');
    await assert.rejects(checkPersistentDir(home, []), (err: unknown) => {
      assert.ok(err instanceof WorkspaceError);
      assert.equal(err.code, 'project_holds_runner');
      assert.match(err.message, /holds the runner's code cache \(.*home\/\.cache\/runner\/code-cache\), which the runner runs on the host.*set XDG_CACHE_HOME outside it/);
      return true;
    });
    assert.deepEqual(await checkPersistentDir(other, []), { uid: process.getuid!(), gid: process.getgid!() });
  } finally {
    if (was === undefined) delete process.env.XDG_CACHE_HOME;
    else process.env.XDG_CACHE_HOME = was;
    await rm(root, { recursive: true, force: true });
  }
});
