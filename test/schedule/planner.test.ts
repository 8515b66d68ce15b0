import assert from 'node:assert/strict';
import { test } from 'node:test';
import { admit, catchUp, decideFire } from '../../src/schedule/planner.js';

test('overlap rules decide what a fire does', () => {
  const cases: Array<[Parameters<typeof decideFire>, string]> = [
    [['skip', 0, 0], 'start'],
    [['skip', 1, 0], 'skip'],
    [['queue', 1, 0], 'queue'],
    [['queue', 1, 1], 'skip'],
    [['allow', 3, 0], 'start'],
    [['queue', 0, 0], 'start'],
  ];
  for (const [args, want] of cases) assert.equal(decideFire(...args).action, want, JSON.stringify(args));
});

test('catch-up: one run only when asked and a fire was missed', () => {
  const missed = () => true;
  const none = () => false;
  const last = new Date('2026-01-01T00:00:00Z');
  const now = new Date('2026-01-05T00:00:00Z');
  assert.equal(catchUp(true, missed, last, now), true);
  assert.equal(catchUp(false, missed, last, now), false);
  assert.equal(catchUp(true, none, last, now), false);
  assert.equal(catchUp(true, missed, undefined, now), false, 'a schedule never fired before has nothing to catch up');
});

test('the global cap admits the oldest waiting runs', () => {
  assert.deepEqual(admit(['a', 'b', 'c'], 1, 2), { start: ['a'], wait: ['b', 'c'] });
  assert.deepEqual(admit(['a'], 2, 2), { start: [], wait: ['a'] });
});
