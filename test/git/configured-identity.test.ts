import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { configuredIdentity, parseIdent } from '../../src/git/configured-identity.js';
import { Git } from '../../src/git/git.js';
import { homeIn } from '../../src/common/user-home.js';

test('an ident line: name and email; anything else is none', () => {
  assert.deepEqual(parseIdent('Ada Lovelace <ada@example.org> 1700000000 +0100\n'), { name: 'Ada Lovelace', email: 'ada@example.org' });
  assert.equal(parseIdent('fatal: unable to auto-detect email address'), undefined);
  assert.equal(parseIdent(' <x@y> 1 +0000'), undefined);
});

test('a home from passwd text, by uid', () => {
  const passwd = 'root:x:0:0:root:/root:/bin/bash\nada:x:1000:1000:Ada:/home/ada:/bin/sh\n';
  assert.equal(homeIn(passwd, 1000), '/home/ada');
  assert.equal(homeIn(passwd, 0), '/root');
  assert.equal(homeIn(passwd, 4242), undefined);
});

test("the project's configured identity is what git there would use; the runner's own is never it", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ident-'));
  try {
    execFileSync('git', ['init', '-q', dir]);
    execFileSync('git', ['-C', dir, 'config', 'user.name', 'Grace Hopper']);
    execFileSync('git', ['-C', dir, 'config', 'user.email', 'grace@example.org']);
    const git = new Git();
    assert.deepEqual(await configuredIdentity(git, { root: dir, commonDir: path.join(dir, '.git') }), { name: 'Grace Hopper', email: 'grace@example.org' });
    // a commit made as the runner (no author given) still names the runner
    const r = await git.run(['var', 'GIT_AUTHOR_IDENT'], { cwd: dir, gitDir: path.join(dir, '.git') });
    assert.match(r.stdout, /^runner <runner@localhost>/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
