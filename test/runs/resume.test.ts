import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { newRecord } from '../../src/run/record.js';
import type { StepResult } from '../../src/run/step-result.js';
import type { Door } from '../../src/runs/door.js';
import { lineDiff, prepareFork, prepareResume } from '../../src/runs/resume.js';
import { EVERY_PROJECT } from '../../src/runs/scope.js';

test('lineDiff: the changed region only, as - old / + new, from its first line', () => {
  assert.equal(lineDiff('a\nb\nc\n', 'a\nB\nc\n'), '  at line 2:\n  - b\n  + B');
  assert.equal(lineDiff('a\nb\n', 'a\nb\nc\n'), '  at line 3:\n  + c');
  assert.equal(lineDiff('a\nb\nc', 'a\nc'), '  at line 2:\n  - b');
  const many = lineDiff(Array.from({ length: 30 }, (_, i) => `x${i}`).join('\n'), Array.from({ length: 30 }, (_, i) => `y${i}`).join('\n'));
  assert.equal(many.split('\n').length, 1 + 20 + 1);
  assert.match(many, /\n {2}… 40 more$/);
});

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

const PIPELINE = (prompt: string) => `version: 1
name: p
project: { path: project, push: never }
steps:
  - id: plan
    image: runner/base:latest
    run: echo plan
  - id: verify
    image: runner/base:latest
    run: echo ${prompt}
`;

function done(id: string, status: StepResult['status']): StepResult {
  return { id, status, exitCode: status === 'completed' ? 0 : 1, oomKilled: false, timedOut: false, durationMs: 1, commit: status === 'completed' ? 'c'.repeat(40) : null, outputs: {}, limits: [] };
}

/** A home with one failed run whose pipeline file and its copy in the run's directory are given. */
async function home(now: string, then: string | undefined) {
  const root = await mkdtemp(path.join(os.tmpdir(), 'resume-unit-'));
  roots.push(root);
  await mkdir(path.join(root, 'project'));
  const file = path.join(root, 'pipeline.yaml');
  await writeFile(file, now);
  const runsDir = path.join(root, 'home', 'runs');
  await mkdir(path.join(runsDir, 'r1'), { recursive: true });
  const rec = newRecord({
    runId: 'r1', pipeline: 'p', pipelineFile: file, project: path.join(root, 'project'), workspace: 'git_worktree',
    status: 'failed', startedAt: new Date().toISOString(), pid: 1, branch: 'run/r1', baseSha: 'b'.repeat(40),
    steps: [done('plan', 'completed'), done('verify', 'failed')], inputs: { topic: 'old' },
    ...(then !== undefined ? { pipelineCopy: 'pipeline.yaml' } : {}),
  });
  await writeFile(path.join(runsDir, 'r1', 'run.json'), JSON.stringify(rec));
  if (then !== undefined) await writeFile(path.join(runsDir, 'r1', 'pipeline.yaml'), then);
  const door: Door = { home: path.join(root, 'home'), runsDir, scope: EVERY_PROJECT, notStarted: () => undefined, active: () => [] };
  return { door, file, root };
}

test('resume with the file it ran with: planned from the first step not completed', async () => {
  const { door } = await home(PIPELINE('v1'), PIPELINE('v1'));
  const p = await prepareResume(door, 'r1', {});
  assert.equal(p.continuation.kind, 'resume');
  assert.equal(p.continuation.from, 'verify');
  assert.deepEqual([...p.continuation.carry.keys()], ['plan']);
  assert.deepEqual(p.inputs, { topic: 'old' });
});

test('resume with a changed pipeline file is refused, showing the difference and how to take it', async () => {
  const { door, file } = await home(PIPELINE('v2'), PIPELINE('v1'));
  await assert.rejects(prepareResume(door, 'r1', {}), (e: Error & { code?: string }) => {
    assert.equal(e.code, 'pipeline_changed');
    assert.ok(e.message.startsWith(`the pipeline file ${file} changed since run r1 ran with it:\n  at line 10:\n  -     run: echo v1\n  +     run: echo v2\n`), e.message);
    assert.ok(e.message.endsWith(`to resume with the file as it is now, say so: runner resume r1 --pipeline ${file}`), e.message);
    return true;
  });
  // said: taken
  const p = await prepareResume(door, 'r1', { pipelineFile: file });
  assert.match(p.loaded.text!, /echo v2/);
});

test('fork takes a changed file, and its inputs over the old run\'s', async () => {
  const { door } = await home(PIPELINE('v2'), PIPELINE('v1'));
  const p = await prepareFork(door, 'r1', 'verify', { inputs: { topic: 'new', extra: 'x' } });
  assert.match(p.loaded.text!, /echo v2/);
  assert.deepEqual(p.inputs, { topic: 'new', extra: 'x' });
  assert.equal(p.continuation.startAt, 'c'.repeat(40));
});

test('a pipeline file gone is said, with what to do', async () => {
  const { door, file } = await home(PIPELINE('v1'), PIPELINE('v1'));
  await rm(file);
  await assert.rejects(prepareResume(door, 'r1', {}), /the pipeline file .* run r1 ran with is gone: give one \(--pipeline FILE\)/);
});

test('a fork from a step the pipeline no longer has is refused', async () => {
  const { door, file } = await home(PIPELINE('v1'), PIPELINE('v1'));
  await writeFile(file, PIPELINE('v1').replace('id: verify', 'id: check'));
  await assert.rejects(prepareFork(door, 'r1', 'verify', {}), /the pipeline .* has no step verify to fork from/);
});

test('attack: the copy of the pipeline in the run directory tampered with or deleted: the resume is refused, not slipped through', async () => {
  const { door, file } = await home(PIPELINE('v1'), PIPELINE('v1'));
  const copy = path.join(door.runsDir, 'r1', 'pipeline.yaml');
  // tampered to match a changed file would need both changed; tampered alone, it differs from the file
  await writeFile(copy, PIPELINE('evil'));
  await assert.rejects(prepareResume(door, 'r1', {}), /changed since run r1 ran with it:\n {2}at line 10:\n {2}- {5}run: echo evil\n {2}\+ {5}run: echo v1/);
  await rm(copy);
  await assert.rejects(prepareResume(door, 'r1', {}), (e: Error & { code?: string }) =>
    e.code === 'pipeline_changed' && e.message === `the copy of the pipeline file run r1 ran with is gone from its directory: nothing says ${file} is unchanged; to resume with the file as it is now, say so: runner resume r1 --pipeline ${file}`);
  assert.equal((await prepareResume(door, 'r1', { pipelineFile: file })).continuation.from, 'verify', 'taken when said');
  // a record of an older runner kept no copy: nothing to compare, the file is taken
  const older = await home(PIPELINE('v1'), undefined);
  assert.equal((await prepareResume(older.door, 'r1', {})).continuation.from, 'verify');
});
