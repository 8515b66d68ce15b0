import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newRunId } from '../../src/run/run-id.js';

test('run ids sort by time and are unique', () => {
  const a = newRunId(new Date('2026-11-22T06:15:00Z'));
  const b = newRunId(new Date('2026-11-22T06:15:01Z'));
  assert.match(a, /^20261122-061500-[a-z0-9]{6}$/);
  assert.ok(a < b);
  const many = new Set(Array.from({ length: 1000 }, () => newRunId(new Date(0))));
  assert.equal(many.size, 1000);
});
