/** Approve / reject (src/runs/decide.ts) on real records in a real home, without an engine: every check of the one operation. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { MAX_COMMENT_CHARS, gateWait } from '../../src/run/gate.js';
import { holdOwnerLock } from '../../src/run/owner-lock.js';
import { newRecord, type RunRecord } from '../../src/run/record.js';
import { readRun, writeRun } from '../../src/run/records.js';
import { decideGate, expireGate } from '../../src/runs/decide.js';
import { cliDoor, type Door } from '../../src/runs/door.js';
import { projectScope } from '../../src/runs/scope.js';
import { RunnerHome } from '../../src/workspace/home.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((r) => rm(r, { recursive: true, force: true }))));

const SINCE = new Date('2026-11-27T10:00:00.000Z');
const HOUR = 3600_000;
let n = 0;

async function home(): Promise<{ door: Door; home: RunnerHome }> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'runner-decide-'));
  roots.push(root);
  const h = new RunnerHome(root);
  await mkdir(h.runs, { recursive: true });
  return { door: cliDoor(h), home: h };
}

/** A run waiting at gate `approve` since SINCE, for an hour. */
async function waiting(door: Door, over: Partial<RunRecord> = {}): Promise<string> {
  const runId = `20261127-100000-gate${String(++n).padStart(2, '0')}`;
  await mkdir(path.join(door.runsDir, runId), { recursive: true });
  const rec = newRecord({ runId, pipeline: 'p', pipelineFile: '/p.yaml', project: '/srv/app', workspace: 'git_worktree', status: 'awaiting_approval', startedAt: SINCE.toISOString(), pid: 1 });
  rec.branch = `run/${runId}`;
  rec.steps = [{ id: 'plan', status: 'completed', exitCode: 0, oomKilled: false, timedOut: false, durationMs: 1, startedAt: SINCE.toISOString(), finishedAt: SINCE.toISOString(), commit: 'a'.repeat(40), outputs: {}, limits: [] } as RunRecord['steps'][number]];
  rec.gate = gateWait('approve', 'approve', { prompt: 'Read PLAN.md', timeoutMs: HOUR }, SINCE);
  await writeRun(door.runsDir, { ...rec, ...over });
  return runId;
}

const at = (ms: number) => new Date(SINCE.getTime() + ms);
async function refusal(p: Promise<unknown>): Promise<RunnerError> {
  try {
    await p;
  } catch (err) {
    assert.ok(err instanceof RunnerError, String(err));
    return err;
  }
  assert.fail('expected a refusal');
}

test('approve: the decision on record (who, when, door, comment trimmed); the run still awaiting_approval, its gate kept for whoever continues it', async () => {
  const { door } = await home();
  const id = await waiting(door);
  const d = await decideGate(door, id, 'approved', { comment: '  looks right, go  \n', by: { via: 'cli', user: 'ann' }, now: at(60_000) });
  assert.deepEqual([d.decision, d.status, d.step], ['approved', 'awaiting_approval', 'approve']);
  const rec = await readRun(door.runsDir, id);
  assert.equal(rec.status, 'awaiting_approval');
  assert.equal(rec.gate?.name, 'approve');
  assert.deepEqual(rec.decisions, [{ step: 'approve', decision: 'approved', by: { via: 'cli', user: 'ann' }, at: at(60_000).toISOString(), comment: 'looks right, go' }]);
  assert.equal(rec.steps.length, 1, 'no step is added until the run goes on');
});

test('deciding twice is refused, naming who decided and when; the record keeps the first decision only', async () => {
  const { door } = await home();
  const id = await waiting(door);
  await decideGate(door, id, 'approved', { comment: 'first', by: { via: 'api', from: '127.0.0.1' }, now: at(1000) });
  for (const second of ['approved', 'rejected'] as const) {
    const e = await refusal(decideGate(door, id, second, { comment: 'second', by: { via: 'mcp' }, now: at(2000) }));
    assert.equal(e.code, 'already_decided');
    assert.match(e.message, /gate approve of run \S+ was already approved by 127\.0\.0\.1 \(api\) at 2026-11-27T10:00:01\.000Z: the run goes on/);
  }
  const rec = await readRun(door.runsDir, id);
  assert.deepEqual(rec.decisions?.map((d) => d.comment), ['first']);
  assert.equal(rec.status, 'awaiting_approval');
});

test('reject: the run ends rejected, the gate a failed step with the decision, its work (branch) kept; then a decision is refused as not waiting', async () => {
  const { door } = await home();
  const id = await waiting(door);
  const d = await decideGate(door, id, 'rejected', { comment: 'wrong plan', by: { via: 'dashboard', from: '10.0.0.5' }, now: at(30 * 60_000) });
  assert.deepEqual([d.decision, d.status], ['rejected', 'rejected']);
  const rec = await readRun(door.runsDir, id);
  assert.equal(rec.status, 'rejected');
  assert.equal(rec.gate, null);
  assert.equal(rec.branch, `run/${id}`);
  assert.deepEqual(rec.error, { code: 'rejected', message: 'rejected by 10.0.0.5 (dashboard): wrong plan' });
  assert.equal(rec.finishedAt, at(30 * 60_000).toISOString());
  const gateStep = rec.steps[rec.steps.length - 1]!;
  assert.deepEqual([gateStep.id, gateStep.status, gateStep.timedOut, gateStep.durationMs, gateStep.approval?.decision], ['approve', 'failed', false, 30 * 60_000, 'rejected']);
  assert.equal(rec.steps[0]!.commit, 'a'.repeat(40), "the plan step's work stays on record");
  const e = await refusal(decideGate(door, id, 'approved', { by: { via: 'cli' }, now: at(31 * 60_000) }));
  assert.equal(e.code, 'not_waiting');
  assert.match(e.message, /is rejected, not waiting at a gate: there is nothing to approve/);
});

test('a run not waiting, unknown, or named like a path is refused; nothing is written', async () => {
  const { door } = await home();
  const done = await waiting(door, { status: 'succeeded', gate: null });
  const before = await readFile(path.join(door.runsDir, done, 'run.json'), 'utf8');
  for (const decision of ['approved', 'rejected'] as const) {
    const e = await refusal(decideGate(door, done, decision, { by: { via: 'cli' } }));
    assert.equal(e.code, 'not_waiting');
    assert.match(e.message, /is succeeded, not waiting at a gate/);
  }
  assert.equal(await readFile(path.join(door.runsDir, done, 'run.json'), 'utf8'), before);
  // awaiting_approval without a gate on record (a hand-edited or torn record) is not a gate to decide
  const noGate = await waiting(door, { gate: null });
  assert.equal((await refusal(decideGate(door, noGate, 'approved', { by: { via: 'cli' } }))).code, 'not_waiting');
  assert.equal((await refusal(decideGate(door, '20261127-100000-nosuch', 'approved', { by: { via: 'cli' } }))).code, 'run_unknown');
  for (const bad of ['..', '../runs', 'a/b', '']) {
    assert.match((await refusal(decideGate(door, bad, 'approved', { by: { via: 'cli' } }))).code, /^(unsafe_name|run_unknown)$/, bad);
  }
});

test(`a comment over ${MAX_COMMENT_CHARS} characters is refused before anything is written; one of exactly that many is kept whole`, async () => {
  const { door } = await home();
  const id = await waiting(door);
  const e = await refusal(decideGate(door, id, 'approved', { comment: 'x'.repeat(MAX_COMMENT_CHARS + 1), by: { via: 'cli' }, now: at(1) }));
  assert.equal(e.code, 'bad_request');
  assert.match(e.message, /the comment is 8001 characters; at most 8000 are kept: shorten it/);
  const mb = await refusal(decideGate(door, id, 'rejected', { comment: 'y'.repeat(1 << 20), by: { via: 'cli' }, now: at(1) }));
  assert.equal(mb.code, 'bad_request');
  assert.equal((await readRun(door.runsDir, id)).decisions, undefined, 'nothing decided');
  await decideGate(door, id, 'approved', { comment: 'z'.repeat(MAX_COMMENT_CHARS), by: { via: 'cli' }, now: at(2) });
  assert.equal((await readRun(door.runsDir, id)).decisions?.[0]?.comment.length, MAX_COMMENT_CHARS);
});

test('a comment is kept as data: control characters, ${{ }} text and shell are stored as they were given', async () => {
  const { door } = await home();
  const id = await waiting(door);
  const comment = 'ok \x1b]0;pwned\x07\x1b[31m ${{ secrets.KEY }} $(touch /tmp/x) `id` "quoted"\r\nnext';
  await decideGate(door, id, 'approved', { comment, by: { via: 'api' }, now: at(1) });
  const text = await readFile(path.join(door.runsDir, id, 'run.json'), 'utf8');
  assert.doesNotMatch(text, /\x1b|\x07|\r/, 'the record file holds no raw control character (JSON escapes them)');
  assert.equal((await readRun(door.runsDir, id)).decisions?.[0]?.comment, comment.trim());
});

test('a decision after the deadline is refused as timed out, and ends the run rejected by its timeout', async () => {
  const { door } = await home();
  const id = await waiting(door);
  const e = await refusal(decideGate(door, id, 'approved', { comment: 'late', by: { via: 'cli', user: 'ann' }, now: at(HOUR) }));
  assert.equal(e.code, 'gate_timed_out');
  assert.match(e.message, /waited until 2026-11-27T11:00:00\.000Z and timed out: the run is rejected, its work kept on run\//);
  const rec = await readRun(door.runsDir, id);
  assert.equal(rec.status, 'rejected');
  assert.equal(rec.error?.code, 'gate_timed_out');
  assert.deepEqual(rec.decisions?.map((d) => [d.decision, d.by.via]), [['rejected', 'timeout']]);
  assert.equal(rec.steps.at(-1)?.timedOut, true);
  assert.ok(!rec.decisions?.some((d) => d.comment === 'late'), "the late decision's comment is not on record as a decision");
  assert.equal((await refusal(decideGate(door, id, 'approved', { by: { via: 'cli' }, now: at(HOUR + 1) }))).code, 'not_waiting');
});

test('expireGate: nothing before the deadline; after it, rejected by timeout once; an approved gate, or one being continued, is left alone', async () => {
  const { door, home: h } = await home();
  const id = await waiting(door);
  assert.equal(await expireGate(door.runsDir, h.root, id, at(HOUR - 1)), false);
  assert.equal((await readRun(door.runsDir, id)).status, 'awaiting_approval');
  assert.equal(await expireGate(door.runsDir, h.root, id, at(HOUR)), true);
  const rec = await readRun(door.runsDir, id);
  assert.deepEqual([rec.status, rec.error?.code, rec.gate], ['rejected', 'gate_timed_out', null]);
  assert.match(rec.error!.message, /no decision by 2026-11-27T11:00:00\.000Z: timed out/);
  assert.equal(await expireGate(door.runsDir, h.root, id, at(2 * HOUR)), false, 'once');
  assert.equal((await readRun(door.runsDir, id)).decisions?.length, 1);

  const approved = await waiting(door);
  await decideGate(door, approved, 'approved', { by: { via: 'cli' }, now: at(10) });
  assert.equal(await expireGate(door.runsDir, h.root, approved, at(2 * HOUR)), false, 'approved in time: it goes on, whenever it is taken up');
  assert.equal((await readRun(door.runsDir, approved)).status, 'awaiting_approval');

  const held = await waiting(door);
  const lock = await holdOwnerLock(h.root, held);
  try {
    assert.equal(await expireGate(door.runsDir, h.root, held, at(2 * HOUR)), false);
    const e = await refusal(decideGate(door, held, 'approved', { by: { via: 'cli' }, now: at(10) }));
    assert.equal(e.code, 'not_waiting');
    assert.match(e.message, /is being run or continued right now/);
  } finally {
    await lock.release();
  }
  assert.equal((await readRun(door.runsDir, held)).status, 'awaiting_approval');
});

test("a gate visited again counts only decisions taken since it began waiting: the first visit's approval does not pass the second", async () => {
  const { door } = await home();
  const since2 = at(2 * HOUR);
  const id = await waiting(door, {
    gate: gateWait('approve', 'approve', { prompt: 'again', timeoutMs: HOUR }, since2),
    decisions: [{ step: 'approve', decision: 'approved', by: { via: 'cli' }, at: at(60_000).toISOString(), comment: 'first visit' }],
  });
  const d = await decideGate(door, id, 'rejected', { comment: 'not this time', by: { via: 'cli' }, now: new Date(since2.getTime() + 1000) });
  assert.equal(d.status, 'rejected');
});

test('two decisions at once: exactly one is taken, the other refused', async () => {
  const { door } = await home();
  for (let i = 0; i < 5; i++) {
    const id = await waiting(door);
    const results = await Promise.allSettled([
      decideGate(door, id, 'approved', { comment: 'a', by: { via: 'api' }, now: at(1) }),
      decideGate(door, id, 'rejected', { comment: 'b', by: { via: 'mcp' }, now: at(1) }),
      decideGate(door, id, 'approved', { comment: 'c', by: { via: 'cli' }, now: at(1) }),
    ]);
    assert.equal(results.filter((r) => r.status === 'fulfilled').length, 1, JSON.stringify(results.map((r) => r.status === 'rejected' ? String(r.reason) : 'ok')));
    for (const r of results) if (r.status === 'rejected') assert.match((r.reason as RunnerError).code, /^(not_waiting|already_decided)$/);
    const rec = await readRun(door.runsDir, id);
    assert.equal(rec.decisions?.length, 1);
  }
});

test("a server's door refuses a run of a project it does not serve, and writes nothing", async () => {
  const { door } = await home();
  const id = await waiting(door);
  const scoped: Door = { ...door, scope: projectScope({ pipelineProjects: async () => ['/srv/other'], folders: [], says: 'it serves /srv/other' }) };
  for (const decision of ['approved', 'rejected'] as const) {
    const e = await refusal(decideGate(scoped, id, decision, { by: { via: 'api' }, now: at(1) }));
    assert.equal(e.code, 'outside_scope');
  }
  const rec = await readRun(door.runsDir, id);
  assert.deepEqual([rec.status, rec.decisions], ['awaiting_approval', undefined]);
});
