import assert from 'node:assert/strict';
import { test } from 'node:test';
import { attemptEntry } from '../../src/delivery/deliver.js';
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
