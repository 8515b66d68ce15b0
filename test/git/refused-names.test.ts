import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { refusedByGit } from '../../src/git/refused-names.js';

const CASES: Array<[string, boolean]> = [
  ['.GIT/config', true],
  ['.Git/config', true],
  ['sub/.gIt/config', true],
  ['.git./config', true],
  ['.git . /config', true],
  ['GIT~1/config', true],
  ['a/.git::$INDEX_ALLOCATION/config', true],
  ['.github/workflows/x.yml', false],
  ['.gitignore', false],
  ['git/config', false],
  ['x.git/config', false],
  ['.gitx/config', false],
  ['d\xff/evil', false],
];

test('names git refuses to store, by the rule', () => {
  for (const [name, refused] of CASES) assert.equal(refusedByGit(Buffer.from(name, 'latin1')), refused, name);
});

test('the rule agrees with the git installed here, name by name', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'refused-'));
  try {
    for (const [i, [name]] of CASES.entries()) {
      const repo = path.join(dir, String(i));
      execFileSync('git', ['init', '-q', repo]);
      const file = Buffer.concat([Buffer.from(`${repo}/`), Buffer.from(name, 'latin1')]);
      await mkdir(file.subarray(0, file.lastIndexOf(0x2f)), { recursive: true });
      await writeFile(file, 'x\n');
      const r = spawnSync('git', ['-C', repo, 'add', '--all'], { encoding: 'utf8' });
      assert.equal(r.status !== 0, refusedByGit(Buffer.from(name, 'latin1')), `${name}: git said ${r.stderr}`);
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
