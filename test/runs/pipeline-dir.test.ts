import assert from 'node:assert/strict';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { PipelineDir } from '../../src/runs/pipeline-dir.js';

const good = (name: string, echo: string) => `version: 1
name: ${name}
defaults: { image: img }
schedule:
  - cron: "0 6 * * *"
steps:
  - id: a
    run: echo ${echo}
`;

async function touchLater(file: string, body: string, n: number): Promise<void> {
  await writeFile(file, body);
  const t = new Date(Date.now() + n * 1000);
  await utimes(file, t, t);
}

test('reload: an edited file is picked up, a broken one keeps its last good version, a removed one goes', async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-pdir-'));
  try {
    const file = path.join(dir, 'digest.yaml');
    await writeFile(file, good('digest', 'one'));
    await writeFile(path.join(dir, 'notes.txt'), 'not a pipeline');
    const pd = new PipelineDir(dir);
    assert.equal(await pd.scan(), true);
    assert.deepEqual(pd.pipelines().map((p) => p.pipeline.name), ['digest']);
    assert.equal(await pd.scan(), false, 'nothing changed, nothing reloaded');

    await touchLater(file, good('digest', 'two'), 1);
    assert.equal(await pd.scan(), true);
    assert.equal(pd.pipelines()[0]!.pipeline.steps[0]!.run, 'echo two');

    await touchLater(file, 'version: 1\nname: digest\nsteps: nope\n', 2);
    await pd.scan();
    assert.equal(pd.pipelines()[0]!.pipeline.steps[0]!.run, 'echo two', 'the last good version keeps running');
    assert.match(pd.states()[0]!.errors[0]!, /digest\.yaml:3:8 steps: /);

    await writeFile(path.join(dir, 'copy.yml'), good('digest', 'copy'));
    await pd.scan();
    assert.equal(pd.pipelines().length, 1);
    assert.ok(pd.states().some((s) => s.errors.some((e) => /duplicate pipeline name "digest"/.test(e))));

    await rm(file);
    await pd.scan();
    assert.deepEqual(pd.pipelines().map((p) => p.file), [path.join(dir, 'copy.yml')], 'the other file takes the name over');
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test("a project's own YAML beside its runner.yaml is not loaded as a pipeline, nor listed as a broken one", async () => {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-pdir-'));
  try {
    await writeFile(path.join(dir, 'runner.yaml'), good('project', 'one'));
    await writeFile(path.join(dir, '.eslintrc.yml'), 'root: true\nextends: eslint:recommended\n');
    await writeFile(path.join(dir, 'docker-compose.yml'), 'version: "3.8"\nservices:\n  db:\n    image: postgres\n');
    await writeFile(path.join(dir, 'broken.yaml'), 'version: 1\nname: broken\nsteps: nope\n');
    const pd = new PipelineDir(dir);
    await pd.scan();
    assert.deepEqual(pd.pipelines().map((p) => p.pipeline.name), ['project']);
    assert.deepEqual(pd.states().map((s) => path.basename(s.file)).sort(), ['broken.yaml', 'runner.yaml'], 'the broken pipeline is listed with its errors; the others are not listed');
    assert.ok(pd.states().find((s) => s.file.endsWith('broken.yaml'))!.errors.length > 0);
    assert.equal(await pd.scan(), false, 'nothing changed: nothing read again');
    // a file that becomes a pipeline is taken from then on
    await touchLater(path.join(dir, '.eslintrc.yml'), good('lint', 'two'), 1);
    assert.equal(await pd.scan(), true);
    assert.deepEqual(pd.pipelines().map((p) => p.pipeline.name).sort(), ['lint', 'project']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
