import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { isUnder, realFolders, within } from '../../src/runs/folders.js';

const made: string[] = [];
after(() => Promise.all(made.map((d) => rm(d, { recursive: true, force: true }))));

test('isUnder: the folder itself and what lies under it, never a sibling with the same prefix', () => {
  assert.equal(isUnder('/w/p', '/w/p'), true);
  assert.equal(isUnder('/w/p/a/b', '/w/p'), true);
  assert.equal(isUnder('/w/p-evil', '/w/p'), false);
  assert.equal(isUnder('/w', '/w/p'), false);
  assert.equal(isUnder('/etc/passwd', '/w/p'), false);
});

test('within: real paths only: ../ and a symlink out are refused, a path in is its real path', async () => {
  const root = await mkdtemp(path.join(os.tmpdir(), 'mcp-folders-'));
  made.push(root);
  const pipes = path.join(root, 'pipes');
  await mkdir(pipes);
  await writeFile(path.join(pipes, 'a.yaml'), 'x');
  await writeFile(path.join(root, 'secret.yaml'), 'x');
  await symlink(path.join(root, 'secret.yaml'), path.join(pipes, 'link.yaml'));
  const [real] = await realFolders([pipes], '--pipelines');
  assert.equal(await within('a.yaml', [real!], 'pipeline file', '--pipelines'), path.join(real!, 'a.yaml'));
  assert.equal(await within(path.join(pipes, 'a.yaml'), [real!], 'pipeline file', '--pipelines'), path.join(real!, 'a.yaml'));
  for (const bad of ['../secret.yaml', 'link.yaml', '/etc/passwd']) {
    await assert.rejects(within(bad, [real!], 'pipeline file', '--pipelines'), (e: RunnerError) => e.code === 'outside_folders' && /not under .*pipes/.test(e.message), bad);
  }
  await assert.rejects(within('nope.yaml', [real!], 'pipeline file', '--pipelines'), (e: RunnerError) => e.code === 'not_found');
  await assert.rejects(within('a.yaml', [], 'project', '--project'), (e: RunnerError) => e.code === 'outside_folders' && /start it with --project DIR/.test(e.message));
  await assert.rejects(realFolders([path.join(root, 'missing')], '--project'), /--project .*missing is not a folder/);
});
