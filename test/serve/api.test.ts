/** The API over a stand-in serve loop: what it lists and answers while runs are queued, starting and running. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { EVERY_PROJECT } from '../../src/runs/scope.js';
import { createApi, type ServeState } from '../../src/serve/api.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

async function record(runsDir: string, runId: string, status: string, startedAt: string): Promise<void> {
  await mkdir(path.join(runsDir, runId), { recursive: true });
  await writeFile(path.join(runsDir, runId, 'run.json'), JSON.stringify({ runId, pipeline: 'p', status, startedAt }));
}

async function serve(state: Partial<ServeState>) {
  const home = await mkdtemp(path.join(os.tmpdir(), 'runner-api-'));
  roots.push(home);
  const runsDir = path.join(home, 'runs');
  await mkdir(runsDir);
  const full: ServeState = {
    runsDir,
    home,
    pipelines: () => [],
    trigger: async () => undefined,
    cancel: async () => false,
    continueRun: async () => {
      throw new Error('this test server continues no run');
    },
    pipelineDirs: [],
    queueLength: () => 0,
    active: () => [],
    notStarted: () => undefined,
    scope: EVERY_PROJECT,
    ...state,
  };
  const server = createApi(full, undefined, new Map());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return { base, runsDir, close: () => new Promise((r) => server.close(r)) };
}

test('runs this server is busy with come first, a started one without a record as starting, then the newest records', async () => {
  const s = await serve({
    active: () => ['20261122-120000-queued', '20261122-080000-oldest', '20261122-115900-nofile'],
    notStarted: (id) =>
      id === '20261122-120000-queued'
        ? { runId: id, pipeline: 'p', status: 'queued', why: 'manual', error: null }
        : id === '20261122-115900-nofile'
          ? { runId: id, pipeline: 'p', status: 'starting', why: 'schedule', error: null }
          : undefined,
  });
  try {
    await record(s.runsDir, '20261122-080000-oldest', 'running', '2026-11-22T11:58:00.000Z');
    for (let i = 0; i < 5; i++) await record(s.runsDir, `20261122-1000${i}0-done${i}xx`, 'succeeded', `2026-11-22T10:00:${i}0.000Z`);

    const runs = (await (await fetch(`${s.base}/api/runs?limit=3`)).json()) as Array<{ runId: string; status: string }>;
    assert.deepEqual(
      runs.map((r) => [r.runId, r.status]),
      [
        ['20261122-120000-queued', 'queued'],
        ['20261122-080000-oldest', 'running'],
        ['20261122-115900-nofile', 'starting'],
      ],
      'a running run asked for long ago is not pushed out by the limit',
    );
    const rest = (await (await fetch(`${s.base}/api/runs`)).json()) as Array<{ runId: string }>;
    assert.deepEqual(rest.slice(3).map((r) => r.runId), [4, 3, 2, 1, 0].map((i) => `20261122-1000${i}0-done${i}xx`), 'each run once');
    const one = await fetch(`${s.base}/api/runs/20261122-115900-nofile`);
    assert.equal(one.status, 200, 'a run between the queue and its record is not a 404');
    assert.equal(((await one.json()) as { status: string }).status, 'starting');
  } finally {
    await s.close();
  }
});

test('a trigger while the server stops is a 503 that says so', async () => {
  const s = await serve({
    trigger: () => {
      throw new RunnerError('stopping', 'runner serve is stopping: it takes no new runs');
    },
  });
  try {
    const res = await fetch(`${s.base}/api/pipelines/p/runs`, { method: 'POST' });
    assert.equal(res.status, 503);
    assert.match(((await res.json()) as { error: string }).error, /stopping/);
  } finally {
    await s.close();
  }
});

test("a run's view has its plan, from its queued record's pipeline file while this server holds it; the list says each run's project", async () => {
  const held = '20261122-120000-heldxx';
  const s = await serve({ active: () => [held], notStarted: (id) => (id === held ? { runId: id, pipeline: 'p', status: 'starting', why: 'trigger', error: null } : undefined) });
  try {
    const file = path.join(path.dirname(s.runsDir), 'p.yaml');
    await writeFile(file, 'version: 1\nname: p\ndefaults: { image: alpine:3 }\nsteps:\n  - id: build\n    run: make\n  - id: test\n    run: make test\n');
    const past = new Date(Date.now() - 60_000);
    await utimes(file, past, past);
    await mkdir(path.join(s.runsDir, held), { recursive: true });
    const queued = { runId: held, pipeline: 'p', pipelineFile: file, project: '/srv/alpha', status: 'queued', startedAt: new Date().toISOString(), steps: [], current: null };
    await writeFile(path.join(s.runsDir, held, 'run.json'), JSON.stringify(queued));
    const view = (await (await fetch(`${s.base}/api/runs/${held}`)).json()) as { status: string; plan: { from: string; steps: Array<{ id: string; state: string }> } };
    assert.equal(view.status, 'starting');
    assert.equal(view.plan.from, 'pipeline_file');
    assert.deepEqual(view.plan.steps.map((x) => [x.id, x.state]), [['build', 'pending'], ['test', 'pending']], 'a run starting lists its whole plan');

    const done = '20261122-100000-donexx';
    await mkdir(path.join(s.runsDir, done));
    await writeFile(path.join(s.runsDir, done, 'run.json'), JSON.stringify({ ...queued, runId: done, project: '/srv/beta', status: 'failed', pipelineFile: '/gone/p.yaml', steps: [{ id: 'build', status: 'failed', exitCode: 2, durationMs: 5, commit: null, outputs: {}, limits: [] }] }));
    const ended = (await (await fetch(`${s.base}/api/runs/${done}`)).json()) as { plan: { from: string; note: string; steps: Array<{ id: string; state: string }> } };
    assert.equal(ended.plan.from, 'record');
    assert.match(ended.plan.note, /\/gone\/p\.yaml is gone/);
    assert.deepEqual(ended.plan.steps.map((x) => [x.id, x.state]), [['build', 'failed']]);

    const list = (await (await fetch(`${s.base}/api/runs`)).json()) as Array<{ runId: string; project?: string }>;
    assert.deepEqual(list.map((r) => [r.runId, r.project]), [[held, '/srv/alpha'], [done, '/srv/beta']]);
  } finally {
    await s.close();
  }
});

test('GET /api/warm says how many step gateways the server keeps warm, how many have the step\'s container too, and how many it keeps; none without --warm', async () => {
  const none = await serve({});
  const warm = await serve({ warm: () => ({ gateways: 2, containers: 1, size: 2 }) });
  try {
    assert.deepEqual(await (await fetch(`${none.base}/api/warm`)).json(), { gateways: 0, containers: 0, size: 0 });
    assert.deepEqual(await (await fetch(`${warm.base}/api/warm`)).json(), { gateways: 2, containers: 1, size: 2 });
    const metrics = await (await fetch(`${warm.base}/metrics`)).text();
    assert.match(metrics, /^runner_warm_gateways 2$/m);
    assert.match(metrics, /^runner_warm_step_containers 1$/m);
  } finally {
    await none.close();
    await warm.close();
  }
});
