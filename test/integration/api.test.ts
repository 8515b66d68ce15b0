/** runner serve's HTTP API end to end on a real port: trigger, follow the live log, cancel, metrics, the token. */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { containersOfRun, IMAGE, projectsForThisFile, runCli, spawnServe, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

async function startServe(f: Fixture, listen: string, env: NodeJS.ProcessEnv = {}) {
  const dir = path.join(f.root, 'pipelines');
  await mkdir(dir, { recursive: true });
  await writeFile(
    path.join(dir, 'talk.yaml'),
    `version: 1
name: talk
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
steps:
  - id: talk
    run: |
      for i in 1 2 3; do echo "line $i <script>"; sleep \${SLEEP:-0.3}; done
`,
  );
  await writeFile(
    path.join(dir, 'long.yaml'),
    `version: 1\nname: long\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: wait\n    run: echo started > s.txt; echo waiting; sleep 300\n`,
  );
  const serve = spawnServe(['--pipelines', dir, '--home', f.home, '--grace', '2s', '--listen', listen], env);
  const m = await serve.waitFor(/listening on (http:\/\/\S+)/, 20_000);
  return { ...serve, base: m[1]!.replace('0.0.0.0', '127.0.0.1') };
}

async function until<T>(fn: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 200));
  }
}

test('trigger a run, follow its log live, cancel another, read the metrics', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const s = await startServe(f, '127.0.0.1:0');
  try {
    assert.deepEqual(await (await fetch(`${s.base}/healthz`)).json(), { ok: true });
    const pipelines = (await (await fetch(`${s.base}/api/pipelines`)).json()) as Array<{ name: string; errors: string[] }>;
    assert.deepEqual(pipelines.map((p) => p.name).sort(), ['long', 'talk']);

    const trig = await fetch(`${s.base}/api/pipelines/talk/runs`, { method: 'POST' });
    assert.equal(trig.status, 202);
    const run = await until(async () => {
      const runs = (await (await fetch(`${s.base}/api/runs?pipeline=talk`)).json()) as Array<{ runId: string }>;
      return runs[0];
    });
    const sse = await fetch(`${s.base}/api/runs/${run.runId}/log`);
    assert.match(sse.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await sse.text();
    const lines = [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!));
    assert.deepEqual(lines.slice(0, 3), [1, 2, 3].map((i) => ({ step: 'talk', line: `line ${i} <script>` })));
    assert.match(text, /event: end\ndata: \{"status":"succeeded"\}/);

    assert.equal((await fetch(`${s.base}/api/pipelines/long/runs`, { method: 'POST' })).status, 202);
    const long = await until(async () => {
      const runs = (await (await fetch(`${s.base}/api/runs?pipeline=long&status=running`)).json()) as Array<{ runId: string; current: unknown }>;
      return runs[0]?.current ? runs[0] : undefined;
    });
    await until(async () => (containersOfRun(long.runId).length ? true : undefined));
    assert.equal((await fetch(`${s.base}/api/runs/${long.runId}/cancel`, { method: 'POST' })).status, 202);
    const canceled = await until(async () => {
      const r = (await (await fetch(`${s.base}/api/runs/${long.runId}`)).json()) as { status: string };
      return r.status === 'running' ? undefined : r;
    });
    assert.equal(canceled.status, 'canceled');
    assert.deepEqual(containersOfRun(long.runId), []);
    assert.equal((await fetch(`${s.base}/api/runs/${long.runId}/cancel`, { method: 'POST' })).status, 404);
    assert.equal((await fetch(`${s.base}/api/pipelines/nope/runs`, { method: 'POST' })).status, 404);
    assert.equal((await fetch(`${s.base}/api/runs/no-such-run`)).status, 404);
    assert.equal((await fetch(`${s.base}/api/runs/..`)).status, 404, 'dot segments never reach a path');
    assert.equal((await fetch(`${s.base}/api/runs/...`)).status, 400);

    const metrics = await (await fetch(`${s.base}/metrics`)).text();
    assert.match(metrics, /^runner_runs\{status="succeeded"\} 1$/m);
    assert.match(metrics, /^runner_runs\{status="canceled"\} 1$/m);
    assert.match(metrics, /^runner_step_duration_seconds_count\{pipeline="talk"\} 1$/m);
    assert.match(metrics, /^runner_queue_length 0$/m);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a non-loopback bind needs a token, and the token is checked on every API call', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const refused = await runCli(['serve', '--pipelines', f.root, '--home', f.home, '--listen', '0.0.0.0:0'], { env: { RUNNER_TOKEN: '' } });
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, /not loopback\) needs a token: set RUNNER_TOKEN/);

  const s = await startServe(f, '0.0.0.0:0', { RUNNER_TOKEN: 'correct-horse-battery' });
  try {
    assert.equal((await fetch(`${s.base}/healthz`)).status, 200, 'liveness needs no token');
    for (const [method, url] of [['GET', '/api/pipelines'], ['GET', '/api/runs'], ['GET', '/metrics'], ['POST', '/api/pipelines/talk/runs']] as const) {
      assert.equal((await fetch(`${s.base}${url}`, { method })).status, 401, `${method} ${url} without a token`);
      assert.equal((await fetch(`${s.base}${url}`, { method, headers: { authorization: 'Bearer wrong' } })).status, 401);
    }
    const ok = await fetch(`${s.base}/api/pipelines`, { headers: { authorization: 'Bearer correct-horse-battery' } });
    assert.equal(ok.status, 200);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});
