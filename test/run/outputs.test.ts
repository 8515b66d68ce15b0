import assert from 'node:assert/strict';
import { mkdtemp, symlink, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { parseOutputs, readOutputsFile } from '../../src/run/outputs.js';

test('key=value and key<<DELIM forms', () => {
  const r = parseOutputs('a=1\nb = two=2\n\nmulti<<EOF\nline 1\nline 2\nEOF\nc=\n');
  assert.deepEqual({ ...r.values }, { a: '1', b: ' two=2', multi: 'line 1\nline 2', c: '' });
  assert.deepEqual(r.problems, []);
});

test('problems are named, good lines are still read', () => {
  const r = parseOutputs('no equals\n1bad=x\nok=yes\nopen<<END\nnever closed\n');
  assert.deepEqual({ ...r.values }, { ok: 'yes' });
  assert.equal(r.problems.length, 3);
  assert.match(r.problems[0]!, /line 1: expected key=value/);
  assert.match(r.problems[1]!, /"1bad" is not a valid output name/);
  assert.match(r.problems[2]!, /open<<END is never closed/);
});

test('the outputs file is never read through a symlink, nor a FIFO', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-outputs-'));
  await writeFile(path.join(dir, 'secret'), 'summary=host file content\n');
  await symlink(path.join(dir, 'secret'), path.join(dir, 'link'));
  assert.deepEqual(await readOutputsFile(path.join(dir, 'link')), { problem: 'the outputs file is a symlink; it was not read' });
  execFileSync('mkfifo', [path.join(dir, 'fifo')]);
  assert.match((await readOutputsFile(path.join(dir, 'fifo'))).problem ?? '', /not a regular file/);
  assert.deepEqual(await readOutputsFile(path.join(dir, 'missing')), {});
  await writeFile(path.join(dir, 'ok'), 'summary=fine\n');
  assert.deepEqual(await readOutputsFile(path.join(dir, 'ok')), { text: 'summary=fine\n' });
});

test('an output named like an Object member is only a name', () => {
  const r = parseOutputs('__proto__=x\nconstructor=y\n');
  assert.equal(Object.getPrototypeOf(r.values), null);
  assert.deepEqual(Object.keys(r.values).sort(), ['__proto__', 'constructor']);
  assert.equal(r.values.constructor, 'y');
});
