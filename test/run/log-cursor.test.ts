import assert from 'node:assert/strict';
import { appendFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { LogCursor } from '../../src/run/log-cursor.js';

const rec = (...ids: string[]) => ({ steps: ids.map((id) => ({ id }) as never), current: null });

async function readAll(c: LogCursor, r: ReturnType<typeof rec>): Promise<{ lines: string[]; reads: number; biggest: number }> {
  const lines: string[] = [];
  let reads = 0;
  let biggest = 0;
  for (let more = true; more; ) {
    const b = await c.read(r);
    reads++;
    biggest = Math.max(biggest, b.lines.reduce((n, l) => n + l.line.length + 1, 0));
    lines.push(...b.lines.map((l) => `${l.step}:${l.line}`));
    more = b.more;
  }
  return { lines, reads, biggest };
}

test('a log is read one bounded chunk at a time, whole lines only, steps in run order', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cursor-'));
  try {
    const many = Array.from({ length: 1000 }, (_, i) => `line ${i}`);
    await writeFile(path.join(dir, 'b.log'), `${many.join('\n')}\n`);
    await writeFile(path.join(dir, 'a.log'), 'first\nhalf a li');
    const c = new LogCursor(dir, 100);
    const got = await readAll(c, rec('a', 'b'));
    assert.deepEqual(got.lines, ['a:first', ...many.map((l) => `b:${l}`)]);
    assert.ok(got.biggest <= 100, `a read returned ${got.biggest} bytes`);
    assert.ok(got.reads > 50);
    await appendFile(path.join(dir, 'a.log'), 'ne\n');
    assert.deepEqual((await readAll(c, rec('a', 'b'))).lines, ['a:half a line'], 'the rest of a line once it is whole');
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('a line longer than a chunk comes out in pieces rather than stall the reader', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cursor-'));
  try {
    await writeFile(path.join(dir, 's.log'), `${'x'.repeat(250)}\nend\n`);
    const got = await readAll(new LogCursor(dir, 100), rec('s'));
    assert.equal(got.lines.join('').replace(/s:/g, ''), `${'x'.repeat(250)}end`);
  } finally {
    await rm(dir, { recursive: true });
  }
});

test('a cursor bounded by another one reads exactly what that one read, long-line pieces cut the same way, then stands where it stands', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'cursor-'));
  try {
    const long = 'y'.repeat(3 * 1024 * 1024); // longer than the 1 MiB a read takes whole: it comes in pieces
    await writeFile(path.join(dir, 'a.log'), `one\ntwo\n${long}\nthree\n`);
    await writeFile(path.join(dir, 'b.log'), 'b1\nb2\n');
    const r = rec('a', 'b');
    const leader = new LogCursor(dir);
    const led: string[] = [];
    // The leader reads three batches: the first lines and two pieces of the long one.
    for (let i = 0; i < 3; i++) led.push(...(await leader.read(r)).lines.map((l) => `${l.step}:${l.line.length}`));
    const edge = leader.position();
    await appendFile(path.join(dir, 'b.log'), 'b3\n');

    const follower = new LogCursor(dir, 100);
    assert.equal(follower.at(edge), false);
    const got: string[] = [];
    for (let more = true; more; ) {
      const b = await follower.read(r, undefined, edge);
      got.push(...b.lines.map((l) => `${l.step}:${l.line.length}`));
      more = b.more;
    }
    assert.deepEqual(got.join(','), led.join(','), 'the same lines and pieces, nothing past the bound (b is not in it)');
    assert.ok(follower.at(edge));
    follower.seek(new Map());
    assert.ok(follower.at(new Map([['a', 0]])), 'a step at 0 stands where a step not named does');
  } finally {
    await rm(dir, { recursive: true });
  }
});
