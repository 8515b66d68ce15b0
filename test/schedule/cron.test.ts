import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cronProblem, firedBetween, nextFire } from '../../src/schedule/cron.js';

const iso = (d: Date | null) => d?.toISOString();

test('weekday mornings in Berlin, in winter and in summer time', () => {
  const spec = { cron: '0 6 * * 1-5', timezone: 'Europe/Berlin' };
  assert.equal(iso(nextFire(spec, new Date('2026-01-09T12:00:00Z'))), '2026-01-12T05:00:00.000Z', 'Friday noon → Monday 06:00 CET');
  assert.equal(iso(nextFire(spec, new Date('2026-07-01T03:00:00Z'))), '2026-07-01T04:00:00.000Z', '06:00 CEST is 04:00 UTC');
});

test('a time that does not exist on the spring-forward day fires once, an hour later', () => {
  const spec = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
  const fires: string[] = [];
  let d = new Date('2026-03-27T12:00:00Z');
  for (let i = 0; i < 3; i++) fires.push(iso((d = nextFire(spec, d)!))!);
  assert.deepEqual(fires, ['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
});

test('a time that exists twice on the fall-back day fires once', () => {
  const spec = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
  const fires: string[] = [];
  let d = new Date('2026-10-24T12:00:00Z');
  for (let i = 0; i < 3; i++) fires.push(iso((d = nextFire(spec, d)!))!);
  assert.equal(new Set(fires.map((f) => f.slice(0, 10))).size, 3, `one fire a day: ${fires}`);
});

test('bad expressions and time zones are named', () => {
  assert.equal(cronProblem({ cron: '0 6 * * 1-5', timezone: 'Europe/Berlin' }), undefined);
  assert.ok(cronProblem({ cron: '61 * * * *' }));
  assert.ok(cronProblem({ cron: '0 6 * * *', timezone: 'Mars/Olympus' }));
  assert.equal(firedBetween({ cron: '0 * * * *' }, new Date('2026-01-01T10:30:00Z'), new Date('2026-01-01T11:00:00Z')), true);
  assert.equal(firedBetween({ cron: '0 * * * *' }, new Date('2026-01-01T10:30:00Z'), new Date('2026-01-01T10:59:00Z')), false);
});
