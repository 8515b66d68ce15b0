/** runner serve with a real clock: a pipeline scheduled every minute fires, and SIGTERM stops the server cleanly. */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { containersOfRun, git, IMAGE, projectsForThisFile, spawnServe } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('a pipeline scheduled every minute runs; an edit is reloaded; SIGTERM stops with nothing left behind', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'pipelines');
  await mkdir(dir);
  await writeFile(
    path.join(dir, 'tick.yaml'),
    `version: 1
name: tick
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
schedule:
  - cron: "* * * * *"
steps:
  - id: tick
    run: date > tick.txt
`,
  );
  await writeFile(path.join(dir, 'broken.yaml'), 'version: 1\nname: broken\nsteps: nope\n');
  const { child, exited, out, waitFor } = spawnServe(['--pipelines', dir, '--home', f.home, '--grace', '5s', '--listen', '127.0.0.1:0']);
  try {
    await waitFor(/watching 1 pipeline\(s\): tick/, 15_000);
    assert.match(out(), /pipeline file problem: .*broken\.yaml:3:8 steps: /);
    const runId = (await waitFor(/tick: run (\S+) succeeded/, 75_000))[1]!;
    const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
    assert.equal(rec.status, 'succeeded');
    assert.ok(git(f.project, 'show', `run/${runId}:tick.txt`));
    assert.deepEqual(containersOfRun(runId), []);

    await writeFile(path.join(dir, 'broken.yaml'), `version: 1\nname: fixed\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: a\n    run: "true"\n`);
    await waitFor(/watching 2 pipeline\(s\): (tick, fixed|fixed, tick)/, 15_000);
  } finally {
    child.kill('SIGTERM');
  }
  assert.equal(await exited, 0, out());
  assert.match(out(), /stopping: no new runs/);
});
