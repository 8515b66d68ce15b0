import assert from 'node:assert/strict';
import { test } from 'node:test';
import { blockingDir } from '../../src/workspace/home-access.js';
import { resolveHome } from '../../src/workspace/home.js';

const dir = (path: string, mode: number, uid = 0, gid = 0) => ({ path, mode, uid, gid });

test("the first directory a project's owner cannot pass through", () => {
  const chain = [dir('/', 0o755), dir('/root', 0o700), dir('/root/.local', 0o755)];
  assert.equal(blockingDir(chain, { uid: 1000, gid: 1000 })?.path, '/root');
  assert.equal(blockingDir([dir('/', 0o755), dir('/var/lib/runner', 0o755)], { uid: 1000, gid: 1000 }), undefined);
  assert.equal(blockingDir([dir('/srv', 0o710, 0, 1000)], { uid: 1000, gid: 1000 }), undefined, 'group x lets the group through');
  assert.equal(blockingDir([dir('/home/u', 0o700, 1000, 1000)], { uid: 1000, gid: 1000 }), undefined, 'its own directory');
  assert.equal(blockingDir([dir('/home/u', 0o700, 1001, 1001)], { uid: 0, gid: 0 }), undefined, 'root passes');
});

test("root's default home is /var/lib/runner; --home and RUNNER_HOME still win", () => {
  assert.equal(resolveHome(undefined, {}, 0), '/var/lib/runner');
  assert.equal(resolveHome(undefined, { XDG_STATE_HOME: '/x' }, 0), '/var/lib/runner');
  assert.equal(resolveHome(undefined, { RUNNER_HOME: '/srv/h' }, 0), '/srv/h');
  assert.equal(resolveHome('/flag', { RUNNER_HOME: '/srv/h' }, 0), '/flag');
  assert.equal(resolveHome(undefined, { XDG_STATE_HOME: '/x' }, 1000), '/x/runner');
});
