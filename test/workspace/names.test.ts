import assert from 'node:assert/strict';
import { mkdir, mkdtemp, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { WorkspaceError } from '../../src/common/errors.js';
import { childPath, safeName } from '../../src/workspace/names.js';

test('names are reduced to [A-Za-z0-9._-]; ., .. and empty are refused', () => {
  const cases: Array<[string, string | null]> = [
    ['design', 'design'],
    ['a;rm -rf ~', 'a-rm--rf'],
    ['../../etc', '..-..-etc'],
    ['line\nbreak', 'line-break'],
    ['ok.name_1', 'ok.name_1'],
    ['.', null],
    ['..', null],
    ['', null],
    ['///', null],
  ];
  for (const [input, want] of cases) {
    if (want === null) assert.throws(() => safeName(input, 'name'), WorkspaceError, JSON.stringify(input));
    else assert.equal(safeName(input, 'name'), want, JSON.stringify(input));
  }
});

test('childPath is a direct child on resolved paths, also through a symlinked root', async () => {
  const base = await mkdtemp(path.join(os.tmpdir(), 'runner-names-'));
  const real = path.join(base, 'w');
  await mkdir(real);
  await symlink(real, path.join(base, 'link'));
  assert.equal(await childPath(path.join(base, 'link'), 'run1', 'run id'), path.join(real, 'run1'));
  await assert.rejects(childPath(real, '../w-evil', 'run id'), WorkspaceError);
  await assert.rejects(childPath(real, '..', 'run id'), WorkspaceError);
});
