/**
 * Nothing runner serve accepted is lost or invisible: a run that cannot start
 * is a not_started record (listed, counted, shown on its pipeline); runs
 * queued when the server is killed with -9 are taken up, in order, by the next
 * one; and during its grace period the server still answers.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { containersOfRun, IMAGE, projectsForThisFile, serveFolder, until, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const getJson = async (url: string): Promise<any> => (await fetch(url)).json();
const trigger = async (base: string, name: string): Promise<string> => {
  const res = await fetch(`${base}/api/pipelines/${name}/runs`, { method: 'POST' });
  assert.equal(res.status, 202);
  return ((await res.json()) as { runId: string }).runId;
};

function pipelines(f: Fixture) {
  return {
    'needs-key.yaml': `version: 1\nname: needs-key\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsecrets: [RUNNER_TEST_ABSENT_KEY]\nsteps:\n  - id: s\n    secrets: [RUNNER_TEST_ABSENT_KEY]\n    run: echo "$RUNNER_TEST_ABSENT_KEY"\n`,
    'nap.yaml': `version: 1\nname: nap\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: nap\n    run: echo "napping $RUNNER_RUN_ID"; sleep \${NAP:-2}; echo "$RUNNER_RUN_ID" > "nap-$RUNNER_RUN_ID.txt"\n`,
  };
}

test('a run that cannot start is a not_started record: listed, its reason shown, counted, and on its pipeline', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, pipelines(f), '127.0.0.1:0', { env: { RUNNER_TEST_ABSENT_KEY: '' } });
  try {
    const runId = await trigger(s.base, 'needs-key');
    const rec = await until('the run to be marked', async () => {
      const r = await getJson(`${s.base}/api/runs/${runId}`);
      return r.status === 'not_started' ? r : undefined;
    });
    assert.equal(rec.error.code, 'secret_missing');
    assert.match(rec.error.message, /secret RUNNER_TEST_ABSENT_KEY named by the pipeline is not set/);
    assert.equal(rec.requestedBy, 'trigger');
    const listed = (await getJson(`${s.base}/api/runs`)) as Array<{ runId: string; status: string }>;
    assert.deepEqual(listed.map((r) => [r.runId, r.status]), [[runId, 'not_started']]);
    const pipeline = ((await getJson(`${s.base}/api/pipelines`)) as Array<{ name: string; lastFailure: any }>).find((p) => p.name === 'needs-key')!;
    assert.equal(pipeline.lastFailure.runId, runId);
    assert.match(pipeline.lastFailure.error, /RUNNER_TEST_ABSENT_KEY/);
    assert.match(await (await fetch(`${s.base}/metrics`)).text(), /^runner_runs\{status="not_started"\} 1$/m);
    const log = await fetch(`${s.base}/api/runs/${runId}/log`);
    assert.equal(log.status, 404);
    assert.match(((await log.json()) as { error: string }).error, /never started, so it has no log: secret RUNNER_TEST_ABSENT_KEY/);
    const diff = await fetch(`${s.base}/api/runs/${runId}/diff`);
    assert.match(((await diff.json()) as { error: string }).error, /has no diff: it never started/);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test('runs queued when the server is killed with -9 are taken up by the next one, in order', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const files = pipelines(f);
  const first = await serveFolder(f, files, '127.0.0.1:0', { args: ['--max-concurrent', '1'], env: { NAP: '2' } });
  const ids: string[] = [];
  try {
    ids.push(await trigger(first.base, 'nap'));
    await until('the first run to start its step', async () => (containersOfRun(ids[0]!).length ? true : undefined));
    for (let i = 0; i < 3; i++) ids.push(await trigger(first.base, 'nap'));
    const queued = (await getJson(`${first.base}/api/runs?status=queued`)) as Array<{ runId: string }>;
    assert.deepEqual(queued.map((r) => r.runId), ids.slice(1));
  } finally {
    first.child.kill('SIGKILL');
    await first.exited;
  }

  const second = await serveFolder(f, files, '127.0.0.1:0', { args: ['--max-concurrent', '1'] });
  try {
    assert.match(second.out(), /taking up 3 run\(s\) queued before the last stop/);
    const done = await until(
      'the queued runs to finish',
      async () => {
        const recs = await Promise.all(ids.slice(1).map((id) => getJson(`${second.base}/api/runs/${id}`)));
        return recs.every((r) => r.status === 'succeeded') ? recs : undefined;
      },
      120_000,
    );
    for (let i = 1; i < done.length; i++) {
      assert.ok(done[i].startedAt >= done[i - 1].finishedAt, `run ${i + 1} started after run ${i} ended: in the order asked`);
    }
    const killed = await getJson(`${second.base}/api/runs/${ids[0]}`);
    assert.equal(killed.status, 'interrupted', 'the run that was running is recovered, not lost');
    assert.deepEqual(containersOfRun(ids[0]!), []);
  } finally {
    second.child.kill('SIGTERM');
    await second.exited;
  }
});

test('during its grace period the server answers: reads and live logs go on, a trigger is a 503', { timeout: 90_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, pipelines(f), '127.0.0.1:0', { env: { NAP: '4' }, args: ['--grace', '30s'] });
  try {
    const runId = await trigger(s.base, 'nap');
    await until('the step to start', async () => (containersOfRun(runId).length ? true : undefined));
    s.child.kill('SIGTERM');
    await s.waitFor(/stopping: no new runs; 1 running run\(s\) get 30 s to finish/, 10_000);
    assert.deepEqual(await getJson(`${s.base}/healthz`), { ok: true });
    assert.equal((await getJson(`${s.base}/api/runs/${runId}`)).status, 'running');
    assert.equal((await fetch(`${s.base}/api/pipelines/nap/runs`, { method: 'POST' })).status, 503);
    const sse = await (await fetch(`${s.base}/api/runs/${runId}/log`)).text();
    assert.match(sse, new RegExp(`napping ${runId}`));
    assert.match(sse, /event: end\ndata: \{"status":"succeeded"\}/, 'the live log of a finishing run can be watched to its end');
    assert.equal(await s.exited, 0);
  } finally {
    s.child.kill('SIGKILL');
  }
});
