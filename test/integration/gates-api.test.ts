/**
 * Approval gates through runner serve's API, for real (the real server on
 * 127.0.0.1, the real engine and git): a triggered run waits at its gate
 * holding nothing; POST /api/runs/:id/approve makes it go on in the server,
 * /reject ends it; a run waiting across a restart of serve is approved after
 * it. And the attacks on this door: two approvals at once (one wins), a
 * comment of control characters, of 1 MB, of `${{ }}` text, a run of a
 * project the server does not serve, a decision after the deadline.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { test } from 'node:test';
import { git, IMAGE, projectsForThisFile, runCli, serveFolder, until, writePipeline, type Fixture } from '../fixtures/project.js';
import { assertHoldsNothing, GATED, record } from '../fixtures/gates.js';

const fixture = projectsForThisFile();

const files = () => ({ 'gated.yaml': GATED('../project'), 'short.yaml': GATED('../project', '3s').replace('name: gated', 'name: short') });
const post = (base: string, p: string, body?: unknown) =>
  fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, ...(body === undefined ? {} : { body: typeof body === 'string' ? body : JSON.stringify(body) }) });

/** A POST on a connection of its own, closed after (a body the server stops reading must not spoil a pooled one). */
function postAlone(base: string, p: string, body: string): Promise<number | undefined> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${p}`, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function trigger(base: string, name: string): Promise<string> {
  const r = await post(base, `/api/pipelines/${name}/runs`);
  assert.equal(r.status, 202, await r.clone().text());
  return ((await r.json()) as { runId: string }).runId;
}

async function statusOf(base: string, id: string): Promise<any> {
  return (await fetch(`${base}/api/runs/${id}`)).json();
}

/**
 * Until the API says the run is `status`; at a gate, also until the run's cleanup is done: its record says
 * awaiting_approval before its worktree is taken apart (a decision meanwhile is refused: the run is still held).
 */
async function untilStatus(base: string, id: string, status: string, ms = 60_000): Promise<any> {
  return until(`run ${id} ${status}`, async () => {
    const r = await statusOf(base, id);
    if (r.status !== status) return undefined;
    if (status === 'awaiting_approval') {
      const rec = JSON.parse(await readFile(path.join(homeOf.get(base)!, 'runs', id, 'run.json'), 'utf8'));
      if (rec.cleanup !== null || rec.status !== status) return undefined;
    }
    return r;
  }, ms);
}
/** the home of each server's base URL */
const homeOf = new Map<string, string>();

test('serve: a triggered run waits at its gate holding nothing; POST approve (202, it goes on here) runs it to its end with the comment; reject (200) ends another; deciding again is 409', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, files(), '127.0.0.1:0');
  homeOf.set(s.base, f.home);
  try {
    const id = await trigger(s.base, 'gated');
    const waiting = await untilStatus(s.base, id, 'awaiting_approval');
    assert.equal(waiting.gate.prompt, "Read PLAN.md on the run's branch; approve to implement it.");
    assertHoldsNothing(f, id);

    const a = await post(s.base, `/api/runs/${id}/approve`, { comment: 'ship it, via the API' });
    assert.equal(a.status, 202);
    const body = (await a.json()) as Record<string, unknown>;
    assert.deepEqual([body.decision, body.step, body.goesOn], ['approved', 'approve', 'here']);
    await untilStatus(s.base, id, 'succeeded');
    const rec = await record(f.home, id);
    assert.deepEqual([rec.decisions[0].by.via, rec.decisions[0].by.from, rec.decisions[0].comment], ['api', '127.0.0.1', 'ship it, via the API']);
    assert.equal(git(f.project, 'show', `run/${id}:comment-env.txt`), 'ship it, via the API');
    assert.match(git(f.project, 'show', `run/${id}:decision.txt`), /^approved 127\.0\.0\.1 \(api\)$/);
    assertHoldsNothing(f, id);

    const again = await post(s.base, `/api/runs/${id}/approve`, {});
    assert.equal(again.status, 409);
    assert.match(((await again.json()) as { error: string }).error, /is succeeded, not waiting at a gate/);

    const other = await trigger(s.base, 'gated');
    await untilStatus(s.base, other, 'awaiting_approval');
    const r = await post(s.base, `/api/runs/${other}/reject`, { comment: 'no' });
    assert.equal(r.status, 200);
    assert.deepEqual((((await r.json()) as Record<string, unknown>).status), 'rejected');
    const rejected = await statusOf(s.base, other);
    assert.equal(rejected.status, 'rejected');
    assert.equal(git(f.project, 'show', `run/${other}:PLAN.md`), 'the plan', 'its work is kept on its branch');
    const twice = await post(s.base, `/api/runs/${other}/reject`);
    assert.equal(twice.status, 409);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('a run waiting at its gate across a restart of serve: still awaiting_approval after the stop; approved through the API of the next server, it goes on', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const first = await serveFolder(f, files(), '127.0.0.1:0');
  homeOf.set(first.base, f.home);
  let id: string;
  try {
    id = await trigger(first.base, 'gated');
    await untilStatus(first.base, id, 'awaiting_approval');
  } finally {
    first.child.kill('SIGTERM');
  }
  assert.equal(await first.exited, 0, first.out());
  const between = await record(f.home, id);
  assert.equal(between.status, 'awaiting_approval', 'a stop of serve leaves a run at its gate waiting');
  assert.equal(between.error, null);
  assertHoldsNothing(f, id);

  const second = await serveFolder(f, files(), '127.0.0.1:0');
  homeOf.set(second.base, f.home);
  try {
    assert.equal((await statusOf(second.base, id)).status, 'awaiting_approval', 'the next server does not take it for a crashed run');
    const a = await post(second.base, `/api/runs/${id}/approve`, { comment: 'after the restart' });
    assert.equal(a.status, 202, await a.clone().text());
    assert.equal(((await a.json()) as { goesOn: string }).goesOn, 'here');
    await untilStatus(second.base, id, 'succeeded');
    assert.equal(git(f.project, 'show', `run/${id}:comment-env.txt`), 'after the restart');
    const rec = await record(f.home, id);
    assert.equal(rec.steps.filter((x: { id: string }) => x.id === 'plan').length, 1, 'plan ran once');
  } finally {
    second.child.kill('SIGTERM');
  }
  assert.equal(await second.exited, 0, second.out());
});

test('attacks through the API: two approvals at once (one wins); comments of control characters, ${{ }} and shell, 8000 and 1 MB; a project the server does not serve; a decision after the deadline', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const elsewhere = await fixture();
  const s = await serveFolder(f, files(), '127.0.0.1:0');
  homeOf.set(s.base, f.home);
  try {
    // Two approvals and a rejection at once, from three clients: exactly one decides.
    const raced = await trigger(s.base, 'gated');
    await untilStatus(s.base, raced, 'awaiting_approval');
    const answers = await Promise.all([
      post(s.base, `/api/runs/${raced}/approve`, { comment: 'one' }),
      post(s.base, `/api/runs/${raced}/approve`, { comment: 'two' }),
      post(s.base, `/api/runs/${raced}/reject`, { comment: 'three' }),
    ]);
    const codes = answers.map((a) => a.status);
    assert.equal(codes.filter((c) => c === 200 || c === 202).length, 1, `exactly one decision: ${codes}`);
    assert.equal(codes.filter((c) => c === 409).length, 2, `the others refused: ${codes}`);
    const won = await until('the race decided', async () => {
      const r = await record(f.home, raced);
      return r.status === 'succeeded' || r.status === 'rejected' ? r : undefined;
    }, 60_000);
    assert.equal(won.decisions.length, 1);

    // A comment of control characters, template and shell text: kept as data, reaching the next step byte for byte.
    const hostile = 'ok \x1b]0;title\x07\x1b[2J\x1b[31mred ${{ secrets.RUNNER_TOKEN }} ${{ steps.plan.outputs.x }} $(touch /tmp/api-pwned) `id`';
    const h = await trigger(s.base, 'gated');
    await untilStatus(s.base, h, 'awaiting_approval');
    const ha = await post(s.base, `/api/runs/${h}/approve`, { comment: hostile });
    assert.equal(ha.status, 202, await ha.clone().text());
    await untilStatus(s.base, h, 'succeeded');
    assert.equal(git(f.project, 'show', `run/${h}:comment-env.txt`), hostile);
    assert.equal(git(f.project, 'show', `run/${h}:comment-output.txt`), hostile);
    assert.doesNotMatch(await readFile(path.join(f.home, 'runs', h, 'run.json'), 'utf8'), /[\x00-\x08\x0b-\x1f\x7f]/, 'the record holds no raw control character');
    assert.doesNotMatch(s.out(), /\x1b|\x07/, "the server's console shows no raw escape of the comment");

    // A comment of 8000 characters (what a decision keeps) is taken; 1 MB is refused and the server stays.
    const big = await trigger(s.base, 'gated');
    await untilStatus(s.base, big, 'awaiting_approval');
    // refused at its first 64 KiB: a 400, or the connection closed while the client still sends (the server reads no more)
    const mb = await postAlone(s.base, `/api/runs/${big}/approve`, JSON.stringify({ comment: 'x'.repeat(1 << 20) })).catch((e: Error) => e.message);
    assert.ok(mb === 400 || /ECONNRESET|EPIPE|other side closed/.test(String(mb)), `a 1 MB comment: ${mb}`);
    assert.deepEqual(await (await fetch(`${s.base}/healthz`)).json(), { ok: true }, 'the server stays');
    assert.equal((await record(f.home, big)).decisions, undefined, 'nothing decided by the refused request');
    const most = 'é'.repeat(8000);
    const ma = await post(s.base, `/api/runs/${big}/approve`, { comment: most });
    assert.equal(ma.status, 202, `a comment of 8000 characters is what a decision keeps, through every door: ${await ma.clone().text()}`);
    await untilStatus(s.base, big, 'succeeded');
    assert.equal(git(f.project, 'show', `run/${big}:comment-env.txt`), most);

    // A run of a project the server does not serve, waiting at a gate in the same home: refused, untouched.
    const outsideFile = await writePipeline(elsewhere, GATED(elsewhere.project));
    const o = await runCli(['exec', outsideFile, '--json', '--no-wait-at-gate', '--home', f.home]);
    assert.equal(o.code, 0, o.stderr);
    for (const what of ['approve', 'reject']) {
      const r = await post(s.base, `/api/runs/${o.json.runId}/${what}`, { comment: 'not yours' });
      assert.equal(r.status, 403, `${what} of a run outside the server's scope`);
      assert.match(((await r.json()) as { error: string }).error, /which this server does not serve/);
    }
    const untouched = await record(f.home, o.json.runId);
    assert.deepEqual([untouched.status, untouched.decisions], ['awaiting_approval', undefined]);

    // A decision after the gate's deadline: refused as timed out, the run rejected by its timeout.
    const late = await trigger(s.base, 'short');
    await untilStatus(s.base, late, 'awaiting_approval');
    const deadline = Date.parse((await statusOf(s.base, late)).gate.deadline);
    await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now() + 200)));
    const la = await post(s.base, `/api/runs/${late}/approve`, { comment: 'too late' });
    assert.equal(la.status, 409);
    assert.match(((await la.json()) as { error: string }).error, /timed out: the run is rejected/);
    const lr = await record(f.home, late);
    assert.deepEqual([lr.status, lr.error.code, lr.decisions.map((d: { by: { via: string } }) => d.by.via)], ['rejected', 'gate_timed_out', ['timeout']]);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

test('serve ends a gate whose wait ran out, rejected by its timeout, with nobody deciding', { timeout: 150_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, files(), '127.0.0.1:0');
  homeOf.set(s.base, f.home);
  try {
    const id = await trigger(s.base, 'short');
    await untilStatus(s.base, id, 'awaiting_approval');
    const ended = await untilStatus(s.base, id, 'rejected', 90_000); // serve looks every 60 s (GATE_SWEEP_MS)
    assert.equal(ended.error.code, 'gate_timed_out');
    assertHoldsNothing(f, id);
  } finally {
    s.child.kill('SIGTERM');
  }
  assert.equal(await s.exited, 0, s.out());
});

