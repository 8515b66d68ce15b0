/** runner serve's HTTP API end to end on a real port: trigger, follow the live log, cancel, metrics, the token. */
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { test } from 'node:test';
import { containersOfRun, IMAGE, projectsForThisFile, runCli, serveFolder, until, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

function startServe(f: Fixture, listen: string, env: NodeJS.ProcessEnv = {}) {
  const talk = `version: 1
name: talk
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
steps:
  - id: talk
    run: |
      echo said > said.txt
      for i in 1 2 3; do echo "line $i <script>"; sleep \${SLEEP:-0.3}; done
`;
  const long = `version: 1\nname: long\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: wait\n    run: echo started > s.txt; echo waiting; sleep 300\n`;
  return serveFolder(f, { 'talk.yaml': talk, 'long.yaml': long }, listen, { env, args: ['--max-concurrent', '1'] });
}

/** What the server answers to bytes sent as they are. */
function rawRequest(base: string, text: string): Promise<string> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    let got = '';
    const sock = net.connect(Number(port), hostname, () => sock.end(text));
    sock.on('data', (b) => (got += b));
    sock.on('close', () => resolve(got));
    sock.on('error', reject);
  });
}

/** fetch cannot set Host; http.request can. */
function statusWithHost(base: string, p: string, host: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    http.get(`${base}${p}`, { headers: { host } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
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
    const run = (await trig.json()) as { runId: string };
    assert.match(run.runId, /^\d{8}-\d{6}-[a-z0-9]{6}$/, 'the trigger names the run it will start');
    const sse = await fetch(`${s.base}/api/runs/${run.runId}/log`); // at once: a run still starting is waited for
    assert.match(sse.headers.get('content-type') ?? '', /text\/event-stream/);
    const text = await sse.text();
    const lines = [...text.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]!));
    assert.deepEqual(lines.slice(0, 3), [1, 2, 3].map((i) => ({ step: 'talk', line: `line ${i} <script>` })));
    assert.match(text, /event: end\ndata: \{"status":"succeeded"\}/);
    const diff = await fetch(`${s.base}/api/runs/${run.runId}/diff`);
    assert.equal(diff.status, 200);
    assert.match(await diff.text(), /^\+said$/m);

    assert.equal((await fetch(`${s.base}/api/pipelines/long/runs`, { method: 'POST' })).status, 202);
    const long = await until('the run', async () => {
      const runs = (await (await fetch(`${s.base}/api/runs?pipeline=long&status=running`)).json()) as Array<{ runId: string; current: unknown }>;
      return runs[0]?.current ? runs[0] : undefined;
    });
    await until('the run', async () => (containersOfRun(long.runId).length ? true : undefined));
    // --max-concurrent 1: a second run waits, named, and can be dropped before it starts.
    const waiting = (await (await fetch(`${s.base}/api/pipelines/talk/runs`, { method: 'POST' })).json()) as { runId: string };
    assert.deepEqual(await (await fetch(`${s.base}/api/runs/${waiting.runId}`)).json(), { runId: waiting.runId, pipeline: 'talk', status: 'queued', why: 'trigger', error: null });
    assert.equal((await (await fetch(`${s.base}/metrics`)).text()).match(/^runner_queue_length (\d+)$/m)?.[1], '1');
    assert.equal((await fetch(`${s.base}/api/runs/${waiting.runId}/cancel`, { method: 'POST' })).status, 202);
    const dropped = (await (await fetch(`${s.base}/api/runs/${waiting.runId}`)).json()) as { runId: string; pipeline: string; status: string; error: unknown };
    assert.deepEqual([dropped.runId, dropped.pipeline, dropped.status, dropped.error], [waiting.runId, 'talk', 'not_started', { code: 'canceled', message: 'canceled before it started' }]);
    assert.equal((await fetch(`${s.base}/api/runs/${waiting.runId}/log`)).status, 404, 'no log for a run that never started');
    assert.equal((await fetch(`${s.base}/api/runs/${long.runId}/cancel`, { method: 'POST' })).status, 202);
    const canceled = await until('the run', async () => {
      const r = (await (await fetch(`${s.base}/api/runs/${long.runId}`)).json()) as { status: string };
      return r.status === 'running' ? undefined : r;
    });
    assert.equal(canceled.status, 'canceled');
    assert.deepEqual(containersOfRun(long.runId), []);
    assert.equal((await fetch(`${s.base}/api/runs/${long.runId}/cancel`, { method: 'POST' })).status, 404);
    assert.equal((await fetch(`${s.base}/api/pipelines/nope/runs`, { method: 'POST' })).status, 404);
    assert.equal((await fetch(`${s.base}/api/runs/no-such-run`)).status, 404);
    const traversal = await rawRequest(s.base, 'GET /api/runs/../../../../etc/passwd HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(traversal, /^HTTP\/1\.1 404 [^]*no route GET \/etc\/passwd/, 'dot segments are resolved before routing: they never reach a path');
    const encoded = await rawRequest(s.base, 'GET /api/runs/%2e%2e/log HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(encoded, /^HTTP\/1\.1 404 [^]*no route GET \/api\/log/);
    assert.equal((await fetch(`${s.base}/api/runs/...`)).status, 400);
    assert.equal((await fetch(`${s.base}/api/runs/${run.runId}/diff`.replace(run.runId, long.runId))).status, 200, 'a canceled run keeps its diff');
    assert.equal(await statusWithHost(s.base, '/api/runs', 'attacker.example'), 403, 'a rebound DNS name is refused');
    const wrongInput = await fetch(`${s.base}/api/pipelines/talk/runs`, { method: 'POST', body: JSON.stringify({ inputs: { topic: 'x' } }) });
    assert.equal(wrongInput.status, 400);
    assert.match(((await wrongInput.json()) as { error: string }).error, /pipeline talk takes no inputs \(got "topic"\)/);
    const notJson = await fetch(`${s.base}/api/pipelines/talk/runs`, { method: 'POST', body: 'topic=x' });
    assert.equal(notJson.status, 400);
    const raw = await rawRequest(s.base, 'GET http://[ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    assert.match(raw, /^HTTP\/1\.1 400 /, 'a request target that is no URL is a 400');
    assert.equal((await fetch(`${s.base}/healthz`)).status, 200, 'and the server lives on');
    const csrf = await fetch(`${s.base}/api/pipelines/talk/runs`, { method: 'POST', headers: { origin: 'https://attacker.example' } });
    assert.equal(csrf.status, 403, "another site's page cannot start runs");

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
