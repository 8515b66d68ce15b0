import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { checkServed, EVERY_PROJECT, projectScope, servedBy } from '../../src/runs/scope.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function tree() {
  const root = await mkdtemp(path.join(os.tmpdir(), 'runner-scope-'));
  roots.push(root);
  for (const d of ['piped', 'projects/a', 'elsewhere', 'projects-not']) await mkdir(path.join(root, d), { recursive: true });
  await symlink(path.join(root, 'elsewhere'), path.join(root, 'projects', 'link-out'));
  await symlink(path.join(root, 'piped'), path.join(root, 'piped-link'));
  return root;
}

test('a server serves its pipelines\' projects and the projects under its folders, by real path; nothing else', async () => {
  const root = await tree();
  const scope = projectScope({ pipelineProjects: async () => [path.join(root, 'piped')], folders: [path.join(root, 'projects')], says: 'the test serves piped and projects/' });
  const served = await servedBy(scope);
  assert.equal(await served(path.join(root, 'piped')), true);
  assert.equal(await served(path.join(root, 'piped-link')), true, 'a link to a served project is that project');
  assert.equal(await served(path.join(root, 'projects', 'a')), true);
  assert.equal(await served(path.join(root, 'projects', 'link-out')), false, 'a link under a folder that leads out of it is not under it');
  assert.equal(await served(path.join(root, 'elsewhere')), false);
  assert.equal(await served(path.join(root, 'projects-not')), false, 'a sibling whose name starts the same is not under the folder');
  assert.equal(await served(path.join(root, 'piped', 'sub')), false, 'a pipeline\'s project is served, not what lies under it');
  assert.equal(await served(''), true, 'a run with no project on record holds nothing of any project');
  await assert.rejects(checkServed(scope, { runId: 'r1', project: path.join(root, 'elsewhere') }), (e: RunnerError) => {
    assert.equal(e.code, 'outside_scope');
    assert.match(e.message, /^run r1 is of the project .*elsewhere, which this server does not serve: the test serves piped and projects\/\. Read or deliver it with the runner CLI/);
    return true;
  });
});

test('the CLI serves every project of its home', async () => {
  const served = await servedBy(EVERY_PROJECT);
  assert.equal(await served('/anywhere/at/all'), true);
  await checkServed(EVERY_PROJECT, { runId: 'r1', project: '/anywhere' });
});
