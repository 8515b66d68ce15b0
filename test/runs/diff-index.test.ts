import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile, mkdir, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { filePatch, indexFile, indexPatch, unquote } from '../../src/runs/diff-index.js';

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

// Attack: a file too big to put in the patch (over 16 MiB) is named by a stub's `Binary files A and B differ` line.
// A name holding ` and ` split that line the wrong way: `x and README.md` was listed as README.md.
test('a big binary file whose name holds " and " is listed by its own name, not by the part after the last " and "', async () => {
  const stub = (p: string, kind: 'A' | 'M' | 'D') =>
    `diff --git a/${p} b/${p}\n` +
    (kind === 'A' ? `new file mode 100644\nindex 0000000..1111111\nBinary files /dev/null and b/${p} differ\n` : kind === 'D' ? `deleted file mode 100644\nindex 1111111..0000000\nBinary files a/${p} and /dev/null differ\n` : `index 1111111..2222222 100644\nBinary files a/${p} and b/${p} differ\n`);
  const text = stub('x and README.md', 'A') + stub('p and q and b/r', 'M') + stub('gone and data.txt', 'D');
  const index = await indexPatch((async function* () { yield Buffer.from(text); })());
  assert.deepEqual(
    index.files.map((f) => [f.path, f.status, f.binary]),
    [['x and README.md', 'added', true], ['p and q and b/r', 'modified', true], ['gone and data.txt', 'deleted', true]],
  );
});

// Attack: a file that became a symlink is two parts of one path in git's patch (its deletion, then its addition).
// ?file= sent the first part only: the page showed the deletion twice and never where the link points.
test("?file= sends every part of a path: a file made a symlink is its deletion and its link's target", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'diff-index-'));
  dirs.push(dir);
  const runs = path.join(dir, 'runs');
  const runId = '20260101-000000-abcdef';
  await mkdir(path.join(runs, runId), { recursive: true });
  const deletion = 'diff --git a/data.txt b/data.txt\ndeleted file mode 100644\nindex 814f4a4..0000000\n--- a/data.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-one\n-two\n';
  const link = 'diff --git a/data.txt b/data.txt\nnew file mode 120000\nindex 0000000..3594e94\n--- /dev/null\n+++ b/data.txt\n@@ -0,0 +1 @@\n+/etc/passwd\n\\ No newline at end of file\n';
  const other = 'diff --git a/z.txt b/z.txt\nnew file mode 100644\nindex 0000000..1111111\n--- /dev/null\n+++ b/z.txt\n@@ -0,0 +1 @@\n+z\n';
  const patch = deletion + link + other;
  await writeFile(path.join(runs, runId, 'diff.patch'), patch);
  await writeFile(path.join(runs, runId, 'run.json'), JSON.stringify({ runId, status: 'succeeded', steps: [] }));
  const part = await filePatch(runs, runId, 'data.txt');
  assert.equal(patch.slice(part.start, part.end + 1), deletion + link, 'both parts of data.txt, and nothing of z.txt');
  assert.equal(part.size, Buffer.byteLength(deletion + link));
  const z = await filePatch(runs, runId, 'z.txt');
  assert.equal(patch.slice(z.start, z.end + 1), other);
});
