/**
 * A failed `verify: true` step says whether the same command failed on the
 * run's base: tried once there (a worktree at the base, the step's own
 * sandbox), remembered per base commit and command in the runner home. On
 * projects of our own: a check broken before the run ("pre-existing"), and one
 * the run breaks ("introduced by this run"); the record, the --json summary,
 * `runs show` and the step's log under <name>.base say so, the run still fails.
 */
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { git, IMAGE, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** A pipeline whose first step does `change` and whose verify step checks that data.txt still says "two". */
const pipeline = (change: string) => `version: 1
name: base-check
project: { path: project, push: never }
defaults: { image: ${IMAGE} }
steps:
  - id: change
    run: ${change}
  - id: verify
    run: |
      echo checking data.txt
      grep -qx two data.txt || { echo "data.txt lost its line two"; exit 3; }
    verify: true
`;

const exec = (f: Fixture, file: string) => runCli(['exec', file, '--json', '--home', f.home]);
const record = (f: Fixture, runId: string) => JSON.parse(readFileSync(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));

test('a verify that fails on the base too is pre-existing; the second run from the same base is told from memory', { timeout: 120_000 }, async () => {
  const f = await fixture();
  // the check is broken before any run: data.txt has no line "two" on the base
  await writeFile(path.join(f.project, 'data.txt'), 'one\n');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-qam', 'break it');
  const base = git(f.project, 'rev-parse', 'HEAD');
  const file = await writePipeline(f, pipeline('echo unrelated > other.txt'));
  const r = await exec(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed', 'a failed verify still fails the run');
  assert.equal(r.json.steps.verify.status, 'failed');
  assert.match(r.json.steps.verify.message, new RegExp(`pre-existing \\(failed on the base ${base.slice(0, 10)} too, exit 3\\)`));
  assert.deepEqual({ ...r.json.steps.verify.base, checkedAt: undefined }, { commit: base, verdict: 'pre_existing', exitCode: 3, runId: r.json.runId, checkedAt: undefined });
  assert.match(r.stderr, /step verify: failed; trying it on the run's base/);
  assert.match(r.stderr, /\[verify\.base\] data\.txt lost its line two/);
  assert.match(r.stderr, /warning: step verify failed: pre-existing/);
  assert.equal(record(f, r.json.runId).steps.find((s: { id: string }) => s.id === 'verify').base.verdict, 'pre_existing');
  assert.match(readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'verify.base.log'), 'utf8'), /data\.txt lost its line two/);
  const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(show.stdout, /verify\s+failed\s+3 .*pre-existing \(failed on the base/);
  // the base's worktree and branch are gone; the run's own branch stays as any failed run's
  assert.deepEqual(git(f.project, 'branch', '--list', 'run/*').split('\n').map((b) => b.trim()), [`run/${r.json.runId}`]);
  assert.equal(readdirSync(path.join(f.home, 'base-checks')).length, 1);

  const again = await exec(f, file);
  assert.equal(again.code, 1);
  assert.equal(again.json.steps.verify.base.remembered, true);
  assert.match(again.json.steps.verify.message, new RegExp(`pre-existing \\(failed on the base ${base.slice(0, 10)} too, exit 3, as run ${r.json.runId} found\\)`));
  assert.doesNotMatch(again.stderr, /trying it on the run's base/, 'not run on the base again');
});

test('a verify that passes on the base and fails on the run is introduced by this run', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const base = git(f.project, 'rev-parse', 'HEAD');
  const file = await writePipeline(f, pipeline('echo one > data.txt'));
  const r = await exec(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.steps.verify.base.verdict, 'introduced');
  assert.match(r.json.steps.verify.message, new RegExp(`introduced by this run \\(passed on the base ${base.slice(0, 10)}\\)`));
  assert.match(readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'verify.base.log'), 'utf8'), /checking data\.txt/);
  // a run whose verify passes asks nothing of the base
  const green = await exec(f, await writePipeline(f, pipeline('echo more >> README.md'), 'green.yaml'));
  assert.equal(green.code, 0, green.stderr);
  assert.equal(green.json.steps.verify.base, undefined);
  assert.doesNotMatch(green.stderr, /on the run's base/);
});
