import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile, appendFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { bound, decodeCursor, encodeCursor, logFrom, logTail } from '../../src/runs/log-read.js';
import type { RunRecord } from '../../src/run/record.js';

const made: string[] = [];
after(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));

test('a cursor goes out and comes back as the same position; anything else is refused with what to do', () => {
  const pos = new Map([['build', 10], ['test#2', 0]]);
  assert.deepEqual(decodeCursor(encodeCursor(pos)), pos);
  for (const bad of ['', 'nope', Buffer.from('[["a",-1]]').toString('base64url'), Buffer.from('{"a":1}').toString('base64url')]) {
    assert.throws(() => decodeCursor(bad), /not one run_log gave: pass the cursor/);
  }
});

test('bound keeps whole lines within the bytes, from the end for a tail; a long line is cut', () => {
  assert.deepEqual(bound(['aaaa', 'bbbb', 'cccc'], 10, true), ['bbbb', 'cccc']);
  assert.deepEqual(bound(['aaaa', 'bbbb', 'cccc'], 10, false), ['aaaa', 'bbbb']);
  assert.match(bound(['x'.repeat(5000)], 100_000, true)[0]!, /… \(1000 more characters\)$/);
});

test('the tail of the logs, control characters shown, then only what was written since', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mcp-log-'));
  made.push(dir);
  await mkdir(dir, { recursive: true });
  await writeFile(path.join(dir, 'build.log'), Array.from({ length: 300 }, (_, i) => `line ${i}`).join('\n') + '\n');
  await writeFile(path.join(dir, 'test.log'), 'a\x1b[2Jb\npartial');
  const rec = { steps: [{ id: 'build' }, { id: 'test' }], current: null } as unknown as RunRecord;
  const tail = await logTail(dir, rec, undefined, 3, 32_000);
  assert.deepEqual(tail.lines, ['[build] line 298', '[build] line 299', '[test] a\\x1b[2Jb']);
  await appendFile(path.join(dir, 'test.log'), ' line\nnext\n');
  const next = await logFrom(dir, rec, undefined, decodeCursor(tail.cursor), 32_000);
  assert.deepEqual(next.lines, ['[test] partial line', '[test] next']);
  assert.equal(next.more, false);
  const onlyBuild = await logTail(dir, rec, 'build', 1, 32_000);
  assert.deepEqual(onlyBuild.lines, ['[build] line 299']);
});
