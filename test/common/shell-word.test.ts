import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { shellQuote, shellWord } from '../../src/common/shell-word.js';

test('a word a shell reads back as it was: quoted when it must be, plain when it can be', () => {
  for (const s of ['/var/lib/runner', "it's", 'a b', '$HOME', '`id`', 'x;y', '', '*', 'new\nline', "''"]) {
    for (const quote of [shellQuote, shellWord]) {
      assert.equal(execFileSync('/bin/sh', ['-c', `printf %s ${quote(s)}`], { encoding: 'utf8' }), s, `${quote.name}(${JSON.stringify(s)})`);
    }
  }
  assert.equal(shellWord('/var/lib/runner'), '/var/lib/runner');
  assert.equal(shellWord('a b'), "'a b'");
  assert.equal(shellQuote('plain'), "'plain'");
});
