/** How a step can end: failed, timed out, oom, a write to the read-only project. Real git, real engine. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, containersOfRun, execPipeline, git, pipelineYaml, projectsForThisFile, treeHash, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('a failing step: its work is committed, later steps do not run, exit 1', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: half
    run: |
      echo partial > partial.txt
      echo "about to fail" >&2
      exit 3
  - id: never
    run: echo never > never.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.steps.half.status, 'failed');
  assert.equal(r.json.steps.half.exitCode, 3);
  assert.equal(r.json.steps.never.status, 'skipped');
  const [c] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.equal(c!.subject, 'step/half (runner/base:latest): failed (exit 3)');
  assert.match(c!.body, /Runner-Status: failed \(exit 3\)/);
  assert.equal(git(f.project, 'show', `${r.json.branch}:partial.txt`), 'partial');
  assert.match(r.stderr, /\[half\] about to fail/);
  assert.match(r.stderr, /step half failed \(exit 3\)/);
});

test('continue_on_error lets the next steps run and the run still fails', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: flaky
    run: exit 1
    continue_on_error: true
  - id: after
    run: echo ran > after.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.flaky.status, 'failed');
  assert.equal(r.json.steps.after.status, 'completed');
});

test('a timeout kills the container in time, even when the step ignores SIGTERM', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: slow
    timeout: 2s
    run: |
      trap '' TERM
      echo started > started.txt
      sleep 300
`),
  );
  const t0 = Date.now();
  const r = await execPipeline(f, file);
  const took = Date.now() - t0;
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.slow.status, 'timed_out');
  // killed, not waited out (its sleep alone is 300 s); the time it took under load is not the promise
  assert.ok(took < 300_000, `killed in time (took ${took} ms with a 2 s timeout and a 5 s grace; its sleep is 300 s)`);
  const [c] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.match(c!.body, /Runner-Status: timed out/);
  assert.match(r.stderr, /timed out .*stopped at its timeout of 2s/);
  assert.deepEqual(containersOfRun(r.json.runId), []);
});

test('a step past its memory limit ends as oom, and the message names the limit', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: hog
    resources: { memory: 48m }
    run: |
      echo before > before.txt
      dd if=/dev/zero of=/dev/null bs=256M count=1
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.hog.status, 'oom');
  assert.match(r.stderr, /oom .*memory limit of 48m/);
  const [c] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.match(c!.body, /Runner-Status: oom/);
  const record = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  assert.equal(record.steps[0].oomKilled, true);
});

test('a step writing to the read-only project fails and the project is unchanged', async () => {
  const f = await fixture();
  const before = await treeHash(f.project);
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: vandal
    run: |
      echo pwned > /home/agent/project-workspace/README.md
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.vandal.status, 'failed');
  assert.match(r.stderr, /Read-only file system/);
  assert.equal(await treeHash(f.project), before, 'the project tree (outside .git) is byte-identical');
  assert.equal(git(f.project, 'status', '--porcelain'), '');
});
