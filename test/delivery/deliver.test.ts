import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attemptEntry, MAX_FAILED_KEPT, MAX_MESSAGE, withAttempt } from '../../src/delivery/deliver.js';
import { DeliveryRefused } from '../../src/delivery/refusal.js';

const at = new Date('2026-11-23T08:00:00Z');

test('a merge that was done: where it went, its commit, who asked and when', () => {
  assert.deepEqual(attemptEntry('merge', { via: 'dashboard', from: '10.0.0.2' }, at, { squash: true }, { ok: true, into: 'main', commit: 'abc' }), {
    action: 'merge',
    at: '2026-11-23T08:00:00.000Z',
    by: { via: 'dashboard', from: '10.0.0.2' },
    into: 'main',
    squash: true,
    commit: 'abc',
    ok: true,
  });
});

test('a refusal keeps its reason and message; another failure only its message; an apply has no target', () => {
  const refused = new DeliveryRefused('target_dirty', 'the project /p has uncommitted changes: a.txt', ['a.txt']);
  assert.deepEqual(attemptEntry('merge', { via: 'cli', user: 'ana' }, at, { into: 'dev', squash: false }, { ok: false, error: refused }), {
    action: 'merge',
    at: '2026-11-23T08:00:00.000Z',
    by: { via: 'cli', user: 'ana' },
    into: 'dev',
    squash: false,
    ok: false,
    refused: 'target_dirty',
    message: 'refused (target_dirty): the project /p has uncommitted changes: a.txt',
  });
  assert.deepEqual(attemptEntry('apply', { via: 'api' }, at, {}, { ok: false, error: new Error('git died') }), {
    action: 'apply',
    at: '2026-11-23T08:00:00.000Z',
    by: { via: 'api' },
    ok: false,
    message: 'git died',
  });
});

test('attack: a flood of refused attempts keeps the newest 50 of them and every delivery done; a long message is cut', () => {
  const done = attemptEntry('merge', { via: 'api' }, at, { squash: false }, { ok: true, into: 'main', commit: 'c1' });
  let list = [done];
  for (let i = 0; i < 200; i++) list = withAttempt(list, attemptEntry('merge', { via: 'api' }, at, { into: `b${i}`, squash: false }, { ok: false, error: new DeliveryRefused('not_deliverable', `there is no branch b${i}`) }));
  assert.equal(list.length, 1 + MAX_FAILED_KEPT);
  assert.equal(list[0], done, 'the delivery that was done stays, oldest as it is');
  assert.deepEqual([list[1]!.into, list.at(-1)!.into], ['b150', 'b199'], 'the newest refusals, in order');
  const huge = attemptEntry('merge', { via: 'cli' }, at, {}, { ok: false, error: new DeliveryRefused('conflict', 'x'.repeat(1_000_000)) });
  assert.ok(huge.message!.length < MAX_MESSAGE + 100);
  assert.match(huge.message!, /… \(\d+ more characters\)$/);
});
