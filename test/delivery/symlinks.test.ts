import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { RunRecord } from '../../src/run/record.js';
import { checkSymlinks, resolveLink } from '../../src/delivery/symlinks.js';

test('a target resolves as the kernel would, through the symlinks of the tree', () => {
  const links = new Map([
    ['src/self', '.'],
    ['src/up', '../src'],
    ['src/loop', 'loop'],
  ]);
  assert.deepEqual(resolveLink(['src'], 'fine.txt', links), ['src', 'fine.txt']);
  assert.deepEqual(resolveLink(['src'], '../src/a', links), ['src', 'a']);
  assert.deepEqual(resolveLink(['src'], 'self/..', links), [], 'self is src itself: self/.. is the root');
  assert.deepEqual(resolveLink(['src'], 'up/../.git', links), ['.git']);
  assert.equal(resolveLink(['src'], '../..', links), undefined, 'out of the repository');
  assert.equal(resolveLink(['src'], '/etc/passwd', links), undefined);
  assert.equal(resolveLink(['src'], 'loop', links), undefined, 'a loop ends');
});

test('with delivery.paths, a symlink that leads outside them is a scope_violation', () => {
  const rec = { runId: 'r', deliveryRules: { verifySteps: [], paths: ['src/**'] } } as unknown as RunRecord;
  const all = new Map([
    ['src/self', '.'],
    ['src/root', 'self/..'],
    ['src/inside', 'fine.txt'],
    ['src/gitdir', '../.git'],
  ]);
  const link = (path: string, readable = true) => ({ path, target: all.get(path) ?? '', readable });
  assert.doesNotThrow(() => checkSymlinks(rec, [link('src/inside')], all));
  for (const bad of [link('src/root'), link('src/gitdir'), link('src/inside', false)]) {
    assert.throws(() => checkSymlinks(rec, [bad], all), { code: 'scope_violation' }, bad.path);
  }
  const free = { ...rec, deliveryRules: { verifySteps: [], paths: null } } as unknown as RunRecord;
  assert.doesNotThrow(() => checkSymlinks(free, [link('src/gitdir')], all), 'without delivery.paths there is no scope');
});
