import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, mkdir, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { indexFile, indexPatch, unquote } from '../../src/serve/diff-index.js';

const dirs: string[] = [];
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const git = (cwd: string, ...args: string[]) => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@localhost', '-c', 'core.quotePath=true', ...args], { cwd, encoding: 'utf8' });

/** A real git patch with each kind of change in it, written as the runner writes diff.patch (git diff --binary). */
async function realPatch(): Promise<{ file: string; numstat: Map<string, [string, string]> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'diff-index-'));
  dirs.push(dir);
  git(dir, 'init', '-q', '-b', 'main');
  await writeFile(path.join(dir, 'keep.txt'), 'one\n-- not a header\ntwo\n');
  await writeFile(path.join(dir, 'gone.txt'), 'bye\nbye\n');
  await writeFile(path.join(dir, 'moved.txt'), 'a\nb\nc\nd\ne\nf\ng\nh\n');
  await writeFile(path.join(dir, 'blob.bin'), Buffer.from([0, 1, 2, 3, 0, 255]));
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'base');
  await writeFile(path.join(dir, 'keep.txt'), 'one\ntwo\n+++ looks like a header\nthree\n');
  await unlink(path.join(dir, 'gone.txt'));
  await mkdir(path.join(dir, 'lib'));
  await writeFile(path.join(dir, 'lib', 'moved.txt'), 'a\nb\nc\nd\ne\nf\ng\nH\n');
  await unlink(path.join(dir, 'moved.txt'));
  await writeFile(path.join(dir, 'blob.bin'), Buffer.from([0, 9, 9, 9, 0, 255, 7]));
  await writeFile(path.join(dir, 'with space.txt'), 'x\n');
  await writeFile(path.join(dir, 'café "q".txt'), 'y\nz\n');
  await writeFile(path.join(dir, 'no-newline.txt'), 'last');
  git(dir, 'add', '-A');
  git(dir, 'commit', '-q', '-m', 'change');
  const file = path.join(dir, 'diff.patch');
  git(dir, 'diff', '--binary', '--no-ext-diff', `--output=${file}`, 'HEAD~1', 'HEAD');
  const numstat = new Map<string, [string, string]>();
  for (const l of git(dir, 'diff', '--numstat', '-z', 'HEAD~1', 'HEAD').split('\0').filter(Boolean)) {
    const [a, r, p] = l.split('\t');
    if (p) numstat.set(p, [a!, r!]);
  }
  return { file, numstat };
}

test('a real patch is indexed file by file: names, kinds, counts as git counts them, and byte ranges that make up the whole', async () => {
  const { file, numstat } = await realPatch();
  const index = await indexFile(file);
  const byPath = new Map(index.files.map((f) => [f.path, f]));
  assert.deepEqual([...byPath.keys()].sort(), ['blob.bin', 'café "q".txt', 'gone.txt', 'keep.txt', 'lib/moved.txt', 'no-newline.txt', 'with space.txt']);
  assert.equal(byPath.get('gone.txt')!.status, 'deleted');
  assert.equal(byPath.get('with space.txt')!.status, 'added');
  assert.equal(byPath.get('café "q".txt')!.status, 'added');
  assert.equal(byPath.get('keep.txt')!.status, 'modified');
  assert.equal(byPath.get('lib/moved.txt')!.status, 'renamed');
  assert.equal(byPath.get('lib/moved.txt')!.oldPath, 'moved.txt');
  assert.equal(byPath.get('blob.bin')!.binary, true);
  assert.deepEqual([byPath.get('blob.bin')!.added, byPath.get('blob.bin')!.removed], [0, 0]);
  for (const f of index.files) {
    if (f.binary || f.status === 'renamed') continue;
    const [a, r] = numstat.get(f.path) ?? [];
    assert.deepEqual([String(f.added), String(f.removed)], [a, r], `${f.path}: counted as git counts`);
  }
  // keep.txt removed a line "-- not a header" (so "--- not a header") and added "+++ looks like a header"
  assert.deepEqual([byPath.get('keep.txt')!.added, byPath.get('keep.txt')!.removed], [2, 1]);

  const whole = await readFile(file);
  assert.equal(index.total.bytes, whole.length);
  assert.equal(index.total.files, 7);
  let at = 0;
  for (const f of index.files) {
    assert.equal(f.offset, at, `${f.path} starts where the one before ended`);
    assert.match(whole.subarray(f.offset, f.offset + f.bytes).toString('utf8'), /^diff --git /);
    at += f.bytes;
  }
  assert.equal(at, whole.length);
});

test('the index is the same however the patch is cut into chunks', async () => {
  const { file } = await realPatch();
  const whole = await readFile(file);
  const cut = (size: number) =>
    (async function* () {
      for (let i = 0; i < whole.length; i += size) yield whole.subarray(i, i + size);
    })();
  const one = await indexPatch(cut(whole.length));
  for (const size of [1, 3, 7, 64]) assert.deepEqual(await indexPatch(cut(size)), one, `chunks of ${size}`);
});

test('a file of one huge line, a patch without a final newline, and a stub for a file too big to put in', async () => {
  const huge = 'x'.repeat(100_000);
  const text =
    `diff --git a/min.js b/min.js\nindex 1..2 100644\n--- a/min.js\n+++ b/min.js\n@@ -1 +1 @@\n-${huge}\n+${huge}y\n` +
    `diff --git "a/big\\303\\251.iso" "b/big\\303\\251.iso"\nnew file mode 100644\nindex 0000000..1111111\nBinary files /dev/null and "b/big\\303\\251.iso" differ\n` +
    `diff --git a/mode.sh b/mode.sh\nold mode 100644\nnew mode 100755`;
  const index = await indexPatch((async function* () { yield Buffer.from(text); })());
  assert.deepEqual(
    index.files.map((f) => [f.path, f.status, f.added, f.removed, f.binary]),
    [['min.js', 'modified', 1, 1, false], ['bigé.iso', 'added', 0, 0, true], ['mode.sh', 'modified', 0, 0, false]],
  );
  assert.equal(index.total.bytes, Buffer.byteLength(text));
});

test('quoted paths are read back to their characters', () => {
  assert.equal(unquote('"caf\\303\\251 \\"q\\".txt"'), 'café "q".txt');
  assert.equal(unquote('"tab\\there"'), 'tab\there');
  assert.equal(unquote('plain.txt'), 'plain.txt');
});
