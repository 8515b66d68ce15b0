/** Two runs on one repository at the same moment both succeed: git is serialized across processes. */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, execPipeline, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('two runner exec on one repository at once: both succeed, no lock error', async () => {
  const f = await fixture();
  const steps = [1, 2, 3].map((i) => `  - id: s${i}\n    run: echo $RUNNER_RUN_ID-${i} > f${i}.txt\n`).join('');
  const file = await writePipeline(f, pipelineYaml(steps));
  const runs = await Promise.all([execPipeline(f, file), execPipeline(f, file), execPipeline(f, file)]);
  for (const r of runs) {
    assert.equal(r.code, 0, r.stderr);
    assert.doesNotMatch(r.stderr, /index\.lock|\.lock': File exists/);
    assert.equal(commitsOn(f.project, r.json.branch, r.json.baseSha).length, 3, `run ${r.json.runId}: ${r.stdout}`);
    assert.equal(git(f.remote, 'rev-parse', r.json.branch), r.json.headSha, `run ${r.json.runId} pushed: ${JSON.stringify(r.json.push ?? r.json.pushed)}`);
  }
  assert.equal(new Set(runs.map((r) => r.json.runId)).size, 3);
  assert.deepEqual(await readdir(path.join(f.home, 'worktrees')), [], runs.map((r) => r.stderr).join('\n'));
});
