/** runner serve's HTTP API end to end on a real port: trigger, follow the live log, cancel, metrics, the token, delivery, rerun. */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { test } from 'node:test';
import { containersOfRun, git, IMAGE, projectsForThisFile, runCli, serveFolder, until, type Fixture } from '../fixtures/project.js';

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
    const { plan, ...queuedView } = (await (await fetch(`${s.base}/api/runs/${waiting.runId}`)).json()) as { plan: { steps: Array<{ id: string; state: string }> } };
    assert.deepEqual(queuedView, { runId: waiting.runId, pipeline: 'talk', status: 'queued', why: 'trigger', error: null });
    assert.deepEqual(plan.steps.map((x) => [x.id, x.state]), [['talk', 'pending']], 'a queued run already shows its plan');
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
    const guarded = [
      ['GET', '/api/pipelines'],
      ['GET', '/api/runs'],
      ['GET', '/metrics'],
      ['POST', '/api/pipelines/talk/runs'],
      ['GET', '/api/runs/20261122-061500-k3f9a2/delivery'],
      ['POST', '/api/runs/20261122-061500-k3f9a2/merge'],
      ['POST', '/api/runs/20261122-061500-k3f9a2/apply'],
      ['POST', '/api/runs/20261122-061500-k3f9a2/rerun'],
    ] as const;
    for (const [method, url] of guarded) {
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

/** JSON in and out, as the dashboard calls (it says so in x-runner-client), or as any other client. */
async function call(base: string, method: string, p: string, body?: unknown, dashboard = false): Promise<{ status: number; json: any }> {
  const res = await fetch(`${base}${p}`, {
    method,
    headers: { 'content-type': 'application/json', ...(dashboard ? { 'x-runner-client': 'dashboard' } : {}) },
    ...(body !== undefined ? { body: typeof body === 'string' ? body : JSON.stringify(body) } : {}),
  });
  return { status: res.status, json: await res.json() };
}

async function ended(base: string, runId: string): Promise<any> {
  return until(`run ${runId} to end`, async () => {
    const r = (await call(base, 'GET', `/api/runs/${runId}`)).json;
    return ['queued', 'starting', 'running'].includes(r.status) ? undefined : r;
  }, 60_000);
}

test('review and deliver through the API: the delivery view, a refusal that changes nothing, merge, rerun, apply, who did it', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const edit = `version: 1
name: edit
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
inputs:
  word: { default: three }
schedule:
  - cron: "0 0 1 1 *"
    budget_per_day: { usd: 7.5 }
steps:
  - id: edit
    run: echo "\${{ inputs.word }}" >> data.txt
`;
  const long = `version: 1\nname: long\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: wait\n    run: echo waiting; sleep 300\n`;
  const s = await serveFolder(f, { 'edit.yaml': edit, 'long.yaml': long }, '127.0.0.1:0');
  const recordOf = async (id: string) => JSON.parse(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'));
  try {
    const pipelines = (await call(s.base, 'GET', '/api/pipelines')).json as Array<{ name: string; today: unknown }>;
    assert.deepEqual(Object.fromEntries(pipelines.map((p) => [p.name, p.today])), {
      edit: { spentUsd: 0, budgetPerDayUsd: 7.5 },
      long: { spentUsd: 0, budgetPerDayUsd: null },
    });

    const trig = await call(s.base, 'POST', '/api/pipelines/edit/runs', { inputs: { word: 'alpha' } }, true);
    assert.equal(trig.status, 202);
    const first = trig.json.runId as string;
    assert.equal((await ended(s.base, first)).status, 'succeeded');
    const listed = ((await call(s.base, 'GET', '/api/runs?pipeline=edit')).json as any[]).find((r) => r.runId === first);
    assert.deepEqual([listed.startedBy, listed.costUsd, listed.tokens], [{ via: 'dashboard', from: '127.0.0.1' }, null, null], 'no agent step: no cost');
    assert.equal((await recordOf(first)).requestedBy, 'trigger', 'requestedBy is kept');

    const view = await call(s.base, 'GET', `/api/runs/${first}/delivery`);
    assert.equal(view.status, 200);
    assert.deepEqual(view.json, {
      project: f.project,
      branch: `run/${first}`,
      currentBranch: 'main',
      branches: ['main'],
      mergedInto: [],
      deliverable: true,
      checkoutDirty: false,
      delivered: null,
    });

    // A dirty checkout: the merge into the branch checked out is refused, and nothing changes.
    await writeFile(path.join(f.project, 'data.txt'), 'one\ntwo\nmine\n');
    const head = git(f.project, 'rev-parse', 'HEAD');
    assert.equal((await call(s.base, 'GET', `/api/runs/${first}/delivery`)).json.checkoutDirty, true);
    const dirty = await call(s.base, 'POST', `/api/runs/${first}/merge`, {});
    assert.equal(dirty.status, 409);
    assert.equal(dirty.json.code, 'target_dirty');
    assert.deepEqual(dirty.json.details, ['data.txt']);
    assert.match(dirty.json.error, /^refused \(target_dirty\): the project .* has uncommitted changes: data\.txt; commit or stash them, then try again$/);
    assert.equal(git(f.project, 'rev-parse', 'HEAD'), head);
    assert.equal(await readFile(path.join(f.project, 'data.txt'), 'utf8'), 'one\ntwo\nmine\n', 'the checkout is left as it was');
    git(f.project, 'checkout', '--', 'data.txt');

    // Bodies the route does not take are a 400; an unknown run a 404.
    assert.equal((await call(s.base, 'POST', `/api/runs/${first}/merge`, { branch: 'main' })).status, 400);
    assert.equal((await call(s.base, 'POST', `/api/runs/${first}/merge`, { into: '-x' })).status, 400);
    assert.equal((await call(s.base, 'POST', `/api/runs/${first}/merge`, 'into=main')).status, 400);
    assert.equal((await call(s.base, 'POST', `/api/runs/${first}/merge`, { squash: 'yes' })).status, 400);
    assert.equal((await call(s.base, 'POST', '/api/runs/20261122-061500-k3f9a2/merge', {})).status, 404);
    assert.equal((await call(s.base, 'POST', `/api/runs/${first}/merge`, { into: 'nope' })).json.code, 'not_deliverable');

    const merged = await call(s.base, 'POST', `/api/runs/${first}/merge`, { into: 'main' }, true);
    assert.equal(merged.status, 200, JSON.stringify(merged.json));
    assert.equal(merged.json.commit, git(f.project, 'rev-parse', 'main'));
    // committed as the project's own identity (its config, else this machine's global one), said in the answer
    assert.deepEqual({ ...merged.json, commit: 'x', author: 'x' }, { merged: true, runId: first, into: 'main', commit: 'x', squash: false, movedCheckout: true, author: 'x' });
    assert.equal(merged.json.author.name, git(f.project, 'log', '-1', '--format=%an', 'main'));
    assert.equal(await readFile(path.join(f.project, 'data.txt'), 'utf8'), 'one\ntwo\nalpha\n', 'the checkout moved with main');
    assert.equal(git(f.project, 'status', '--porcelain'), '');
    assert.deepEqual((await call(s.base, 'GET', `/api/runs/${first}/delivery`)).json.mergedInto, ['main'], 'the view knows main already holds the run');
    const rec = await recordOf(first);
    assert.equal(rec.delivered.how, 'merge');
    assert.deepEqual(
      rec.deliveries.map((d: any) => [d.action, d.ok, d.refused ?? null, d.by.via, d.by.from, d.into ?? null, d.squash]),
      [
        ['merge', false, 'target_dirty', 'api', '127.0.0.1', null, false],
        ['merge', false, 'not_deliverable', 'api', '127.0.0.1', 'nope', false], // the bad bodies never reached the run
        ['merge', true, null, 'dashboard', '127.0.0.1', 'main', false],
      ],
    );
    assert.match(rec.deliveries[0].message, /uncommitted changes: data\.txt/);
    assert.equal(rec.deliveries[2].commit, merged.json.commit);
    assert.ok(rec.deliveries.every((d: any) => !Number.isNaN(Date.parse(d.at))));
    assert.match((await runCli(['runs', 'show', first, '--home', f.home])).stdout, /^started by dashboard \(from 127\.0\.0\.1\)$/m);

    // Again: the same pipeline with the same inputs, recorded as a rerun of the first.
    const again = await call(s.base, 'POST', `/api/runs/${first}/rerun`);
    assert.equal(again.status, 202, JSON.stringify(again.json));
    assert.deepEqual({ ...again.json, runId: 'x' }, { queued: true, runId: 'x', pipeline: 'edit', rerunOf: first });
    const second = again.json.runId as string;
    assert.notEqual(second, first);
    const rerun = await ended(s.base, second);
    assert.equal(rerun.status, 'succeeded');
    assert.deepEqual(rerun.inputs, { word: 'alpha' });
    assert.deepEqual(rerun.startedBy, { via: 'rerun', rerunOf: first, from: '127.0.0.1' });
    assert.equal((await call(s.base, 'POST', '/api/runs/20261122-061500-k3f9a2/rerun')).status, 404);

    // Apply: the rerun's change (on the merged main) into the checkout, uncommitted.
    const applied = await call(s.base, 'POST', `/api/runs/${second}/apply`, {});
    assert.equal(applied.status, 200, JSON.stringify(applied.json));
    assert.deepEqual(applied.json, { applied: true, runId: second, project: f.project, files: ['data.txt'] });
    assert.equal(await readFile(path.join(f.project, 'data.txt'), 'utf8'), 'one\ntwo\nalpha\nalpha\n');
    assert.equal(git(f.project, 'rev-parse', 'HEAD'), merged.json.commit, 'nothing is committed');
    const applyRec = await recordOf(second);
    assert.deepEqual([applyRec.delivered.how, applyRec.deliveries.length, applyRec.deliveries[0].action, applyRec.deliveries[0].ok], ['apply', 1, 'apply', true]);
    assert.equal((await call(s.base, 'POST', `/api/runs/${second}/apply`, { files: [] })).status, 400);
    const again2 = await call(s.base, 'POST', `/api/runs/${second}/apply`);
    assert.deepEqual([again2.status, again2.json.code], [409, 'target_dirty'], 'the applied change is uncommitted: a second apply is refused');

    // A run still running is never delivered, and its record is left to it.
    const running = (await call(s.base, 'POST', '/api/pipelines/long/runs')).json.runId as string;
    const early = await call(s.base, 'POST', `/api/runs/${running}/merge`, { into: 'main' });
    assert.deepEqual([early.status, early.json.code], [409, 'not_deliverable']);
    assert.match(early.json.error, /(queued|starting|running)/);
    await until('the long run', async () => ((await call(s.base, 'GET', `/api/runs/${running}`)).json.status === 'running' ? true : undefined));
    const busy = await call(s.base, 'POST', `/api/runs/${running}/apply`);
    assert.deepEqual([busy.status, busy.json.code], [409, 'not_deliverable']);
    assert.match(busy.json.error, /still running/);
    assert.deepEqual((await call(s.base, 'GET', `/api/runs/${running}/delivery`)).json.deliverable, false);
    assert.equal((await call(s.base, 'POST', `/api/runs/${running}/cancel`)).status, 202);
    assert.equal((await ended(s.base, running)).deliveries, undefined);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});
