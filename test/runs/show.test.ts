import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { newRecord, type RunRecord } from '../../src/run/record.js';
import { currentRun, type NotStarted } from '../../src/runs/show.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function runs(rec: Partial<RunRecord>): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'show-unit-'));
  roots.push(root);
  await mkdir(path.join(root, 'r1'));
  const r = newRecord({ runId: 'r1', pipeline: 'p', pipelineFile: '/p.yaml', project: '/proj', workspace: 'git_worktree', status: 'failed', startedAt: 't', pid: 1, ...rec });
  await writeFile(path.join(root, 'r1', 'run.json'), JSON.stringify(r));
  return root;
}
const holding = (n?: NotStarted) => ({ notStarted: (id: string) => (n && id === n.runId ? n : undefined) });
const starting = (continues?: number): NotStarted => ({ runId: 'r1', pipeline: 'p', status: 'starting', error: null, ...(continues !== undefined ? { continues } : {}) });

test('a run being resumed shows as starting until its record counts the new start, not as the run it was', async () => {
  // resumed: its record still says failed, with the one start it had
  assert.equal((await currentRun(await runs({}), holding(starting(1)), 'r1')).status, 'starting');
  // the resume wrote its record (running), then ended (succeeded) while the door still lets it go: the record
  assert.equal((await currentRun(await runs({ status: 'running', attempts: [{ n: 1, startedAt: 't', how: 'start' }, { n: 2, startedAt: 't', how: 'resume' }] }), holding(starting(1)), 'r1')).status, 'running');
  assert.equal((await currentRun(await runs({ status: 'succeeded', attempts: [{ n: 1, startedAt: 't', how: 'start' }, { n: 2, startedAt: 't', how: 'resume' }] }), holding(starting(1)), 'r1')).status, 'succeeded');
  // a run that ended, its holder still letting it go (not a resume): the record, as a cancel must see it
  assert.equal((await currentRun(await runs({ status: 'succeeded' }), holding(starting()), 'r1')).status, 'succeeded');
  assert.equal((await currentRun(await runs({}), holding(), 'r1')).status, 'failed');
});
