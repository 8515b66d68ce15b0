/** Ctrl-C during a step: the container goes, the work is committed, the worktree removed, exit 130. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, containersOfRun, execPipeline, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('SIGINT during a step cancels the run cleanly', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: long
    run: |
      echo partial > partial.txt
      echo "step is running"
      sleep 300
  - id: next
    run: echo never > never.txt
`),
  );
  let sent = 0;

  const r = await execPipeline(f, file, [], {
    onLine: (line, child) => {
      if (line.includes('[long] step is running') && !sent) {
        sent = Date.now();
        child.kill('SIGINT');
      }
    },
  });
  assert.ok(sent > 0, 'the step started');
  assert.equal(r.code, 130, r.stderr);
  // canceled, not waited out: the step's sleep alone is 300 s
  assert.ok(Date.now() - sent < 300_000, `canceled ${Date.now() - sent} ms after the signal: the step's sleep of 300 s was waited out`);
  assert.equal(r.json.status, 'canceled');
  assert.equal(r.json.steps.long.status, 'canceled');
  assert.equal(r.json.steps.next.status, 'skipped');
  assert.deepEqual(containersOfRun(r.json.runId), [], 'no container left');
  const [c] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.match(c!.body, /Runner-Status: canceled/);
  assert.equal(git(f.project, 'show', `${r.json.branch}:partial.txt`), 'partial', 'the step\'s work is committed');
  assert.equal(existsSync(path.join(f.home, 'worktrees', r.json.runId)), false, 'the worktree is removed');
  assert.match(r.stderr, /SIGINT: canceling/);

});
