import assert from 'node:assert/strict';
import { test } from 'node:test';
import { argBatches, binaryStub, parseRawDiff, quotePath } from '../../src/workspace/patch-file.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const Z = '0'.repeat(40);

test('git diff --raw -z output, a path with spaces and a newline included', () => {
  const out = `:000000 100644 ${Z} ${A} A\0big file.bin\0:100644 100755 ${A} ${B} M\0x\ny\0`;
  assert.deepEqual(parseRawDiff(out), [
    { oldMode: '000000', newMode: '100644', oldOid: Z, newOid: A, status: 'A', path: 'big file.bin' },
    { oldMode: '100644', newMode: '100755', oldOid: A, newOid: B, status: 'M', path: 'x\ny' },
  ]);
});

test('paths are quoted as git quotes them', () => {
  assert.equal(quotePath('a/plain.bin'), 'a/plain.bin');
  assert.equal(quotePath('a/x\ny'), '"a/x\\ny"');
  assert.equal(quotePath('a/tab\there "q" \\'), '"a/tab\\there \\"q\\" \\\\"');
  assert.equal(quotePath('a/é\x1b'), '"a/\\303\\251\\033"');
});

test('stubs for a big file added, deleted, modified, and with its mode changed', () => {
  assert.equal(
    binaryStub({ oldMode: '000000', newMode: '100644', oldOid: Z, newOid: A, status: 'A', path: 'big.bin' }),
    `diff --git a/big.bin b/big.bin\nnew file mode 100644\nindex ${Z}..${A}\nBinary files /dev/null and b/big.bin differ\n`,
  );
  assert.equal(
    binaryStub({ oldMode: '100644', newMode: '000000', oldOid: A, newOid: Z, status: 'D', path: 'big.bin' }),
    `diff --git a/big.bin b/big.bin\ndeleted file mode 100644\nindex ${A}..${Z}\nBinary files a/big.bin and /dev/null differ\n`,
  );
  assert.equal(
    binaryStub({ oldMode: '100644', newMode: '100644', oldOid: A, newOid: B, status: 'M', path: 'big.bin' }),
    `diff --git a/big.bin b/big.bin\nindex ${A}..${B} 100644\nBinary files a/big.bin and b/big.bin differ\n`,
  );
  assert.match(binaryStub({ oldMode: '100644', newMode: '100755', oldOid: A, newOid: B, status: 'M', path: 'b' }), /\nold mode 100644\nnew mode 100755\nindex /);
});

test('arguments are grouped to fit a command line', () => {
  const groups = argBatches(['aaaa', 'bbbb', 'cccc', 'dd'], 10);
  assert.deepEqual(groups, [['aaaa', 'bbbb'], ['cccc', 'dd']]);
  assert.deepEqual(argBatches([], 10), []);
  assert.deepEqual(argBatches(['x'.repeat(20)], 10), [['x'.repeat(20)]], 'one argument longer than a group is a group of its own');
});
