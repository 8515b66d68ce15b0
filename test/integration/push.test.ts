/** push: auto | always | never against a real local remote. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execPipeline, git, projectsForThisFile, pipelineYaml, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const STEP = `  - id: touch
    run: date > stamp.txt
`;

function remoteHas(f: { remote: string }, branch: string): boolean {
  try {
    git(f.remote, 'rev-parse', '--verify', `refs/heads/${branch}`);
    return true;
  } catch {
    return false;
  }
}

test('push: auto pushes when the remote exists', async () => {
  const f = await fixture();
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(STEP, '  push: auto')));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.pushed, true);
  assert.ok(remoteHas(f, r.json.branch));
});

test('push: auto without a remote succeeds and says it did not push', async () => {
  const f = await fixture({ remote: false });
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(STEP, '  push: auto')));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.pushed, false);
  assert.match(r.stderr, /not pushed: the project has no remote "origin"/);
  assert.ok(git(f.project, 'rev-parse', r.json.branch), 'the branch is kept locally');
});

test('push: never does not push even when the remote exists', async () => {
  const f = await fixture();
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(STEP, '  push: never')));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.pushed, false);
  assert.equal(remoteHas(f, r.json.branch), false);
});

test('push: always fails the run when it cannot push, keeps the branch and says how to push later', async () => {
  const f = await fixture();
  git(f.project, 'remote', 'set-url', 'origin', `${f.root}/no-such-remote.git`);
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(STEP, '  push: always')));
  assert.equal(r.code, 3, r.stderr);
  assert.equal(r.json.status, 'error');
  assert.equal(r.json.pushed, false);
  assert.equal(r.json.error.code, 'push_failed');
  assert.match(r.json.error.message, new RegExp(`push it later with: git -C \\S+ push origin ${r.json.branch}`));
  assert.equal(git(f.project, 'rev-parse', r.json.branch), r.json.headSha, 'the branch is kept locally');
  const config = git(f.project, 'config', '--list', '--local');
  assert.doesNotMatch(config, /run\//, 'nothing about the push was written to .git/config');
});

test('push: always without the named remote fails with exit 3', async () => {
  const f = await fixture({ remote: false });
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(STEP, '  push: always')));
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.json.error.message, /push: always, but the project \S+ has no remote "origin": add it \(git -C \S+ remote add origin URL\) and push the branch \(runner push \S+\), or set project\.remote or push: auto/);
  assert.doesNotMatch(r.stderr, /push it later with: git -C \S+ push origin/, 'no hint to push to a remote that does not exist');
});
