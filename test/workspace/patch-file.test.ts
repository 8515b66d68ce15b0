import assert from 'node:assert/strict';
import { test } from 'node:test';
import { binaryStub, parseRawDiff, quotePath, removalEntries } from '../../src/workspace/patch-file.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const Z = '0'.repeat(40);
const b = (s: string | number[]) => (typeof s === 'string' ? Buffer.from(s) : Buffer.from(s));

test('git diff --raw -z output as bytes: a path with spaces, a newline, and one that is not UTF-8', () => {
  const out = Buffer.concat([b(`:000000 100644 ${Z} ${A} A\0big file.bin\0:100644 100755 ${A} ${B} M\0x\ny\0:100644 100644 ${A} ${B} M\0`), b([0x62, 0xe9, 0]) ]);
  const got = parseRawDiff(out);
  assert.deepEqual(got.map((c) => [c.status, c.oldMode, c.newMode, c.oldOid, c.newOid]), [
    ['A', '000000', '100644', Z, A],
    ['M', '100644', '100755', A, B],
    ['M', '100644', '100644', A, B],
  ]);
  assert.deepEqual(got.map((c) => [...c.path]), [[...b('big file.bin')], [...b('x\ny')], [0x62, 0xe9]], 'paths keep their bytes');
});

test('paths are quoted as git quotes them', () => {
  assert.equal(quotePath(b('a/plain.bin')), 'a/plain.bin');
  assert.equal(quotePath(b('a/x\ny')), '"a/x\\ny"');
  assert.equal(quotePath(b('a/tab\there "q" \\')), '"a/tab\\there \\"q\\" \\\\"');
  assert.equal(quotePath(b('a/é\x1b')), '"a/\\303\\251\\033"');
  assert.equal(quotePath(b([0x61, 0x2f, 0xe9])), '"a/\\351"', 'a byte that is not UTF-8 is quoted as itself');
});

test('stubs for a big file added, deleted, modified, and with its mode changed', () => {
  assert.equal(
    binaryStub({ oldMode: '000000', newMode: '100644', oldOid: Z, newOid: A, status: 'A', path: b('big.bin') }),
    `diff --git a/big.bin b/big.bin\nnew file mode 100644\nindex ${Z}..${A}\nBinary files /dev/null and b/big.bin differ\n`,
  );
  assert.equal(
    binaryStub({ oldMode: '100644', newMode: '000000', oldOid: A, newOid: Z, status: 'D', path: b('big.bin') }),
    `diff --git a/big.bin b/big.bin\ndeleted file mode 100644\nindex ${A}..${Z}\nBinary files a/big.bin and /dev/null differ\n`,
  );
  assert.equal(
    binaryStub({ oldMode: '100644', newMode: '100644', oldOid: A, newOid: B, status: 'M', path: b('big.bin') }),
    `diff --git a/big.bin b/big.bin\nindex ${A}..${B} 100644\nBinary files a/big.bin and b/big.bin differ\n`,
  );
  assert.match(binaryStub({ oldMode: '100644', newMode: '100755', oldOid: A, newOid: B, status: 'M', path: b('b') }), /\nold mode 100644\nnew mode 100755\nindex /);
});

test('index removals are fed as exact bytes', () => {
  assert.deepEqual([...removalEntries([b('x'), b([0xe9])])], [...b(`0 ${Z}\tx\0`), ...b(`0 ${Z}\t`), 0xe9, 0]);
});
