import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CUT_MARKER, LineSplitter } from '../../src/common/line-splitter.js';

function split(chunks: string[], maxLine?: number, guard?: number): string[] {
  const lines: string[] = [];
  const s = new LineSplitter((l) => lines.push(l), { ...(maxLine ? { maxLine } : {}), ...(guard ? { guard } : {}) });
  for (const c of chunks) s.push(Buffer.from(c));
  s.end();
  return lines;
}

test('lines are joined across chunks and split within them', () => {
  assert.deepEqual(split(['hel', 'lo\nwor', 'ld\n']), ['hello', 'world']);
  assert.deepEqual(split(['a\nb\n\nc']), ['a', 'b', '', 'c']);
  assert.deepEqual(split(['crlf\r\n']), ['crlf']);
  assert.deepEqual(split([]), []);
});

test('a secret split across chunks arrives whole in one line', () => {
  assert.deepEqual(split(['token=hun', 'ter22\n']), ['token=hunter22']);
});

test('a line longer than the cap is cut and marked, and the next line is whole', () => {
  const lines = split(['x'.repeat(50), 'y'.repeat(50), '\nnext\n'], 64);
  assert.equal(lines.length, 2);
  assert.equal(lines[0], 'x'.repeat(50) + 'y'.repeat(14) + CUT_MARKER);
  assert.equal(lines[1], 'next');
});

test('a cut line also loses the guard bytes before the cut, so no prefix of a secret survives', () => {
  const lines = split(['x'.repeat(60) + 'SECRET-VALUE-AND-MORE\n'], 64, 8);
  assert.equal(lines[0], 'x'.repeat(56) + CUT_MARKER);
});
