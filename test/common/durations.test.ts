import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatDuration, formatSize, parseDuration, parseSize } from '../../src/common/durations.js';

test('parseDuration reads the units people write', () => {
  const cases: Array<[string, number | undefined]> = [
    ['90s', 90_000],
    ['30m', 1_800_000],
    ['1h', 3_600_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['1.5s', 1500],
    ['2d', 172_800_000],
    ['lots', undefined],
    ['30', undefined],
    ['', undefined],
    ['0s', undefined],
    ['-5s', undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseDuration(text), want, text);
});

test('parseSize reads k, m and g in either case', () => {
  const cases: Array<[string, number | undefined]> = [
    ['512m', 512 * 1024 ** 2],
    ['2g', 2 * 1024 ** 3],
    ['2G', 2 * 1024 ** 3],
    ['64k', 65_536],
    ['1.5g', 1.5 * 1024 ** 3],
    ['100', 100],
    ['lots', undefined],
    ['0m', undefined],
    ['2t', undefined],
  ];
  for (const [text, want] of cases) assert.equal(parseSize(text), want, text);
});

test('formatDuration and formatSize are for people', () => {
  assert.equal(formatDuration(4200), '4.2s');
  assert.equal(formatDuration(61_000), '1m01s');
  assert.equal(formatDuration(3_700_000), '1h01m');
  assert.equal(formatSize(512 * 1024 ** 2), '512m');
  assert.equal(formatSize(2 * 1024 ** 3), '2g');
});
