/**
 * Approval gates through the CLI, for real (the real engine, real git, the
 * runner CLI as its own processes): a foreground `runner exec` waits at the
 * gate holding no container and no worktree, says how to decide, and goes on
 * when `runner approve` in another process decides; the comment reaches the
 * next step; deciding twice is refused; a rejection ends the run rejected
 * with its work kept on its branch; a kill -9 of the waiting exec leaves the
 * run waiting, and an approval afterwards runs it to its end.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { assertHoldsNothing, execUntilGate, GATED, record } from '../fixtures/gates.js';
import { containersOfRun, git, IMAGE, otherWorktrees, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('exec waits at the gate holding nothing, says how to decide; runner approve --comment from another process: it goes on, the comment reaches the next step; deciding again is refused', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, GATED(f.project));
  const w = await execUntilGate(file, f.home);
  try {
    assert.match(w.out(), /Read PLAN\.md on the run's branch; approve to implement it\./, 'the prompt is said');
    assert.match(w.out(), new RegExp(`runner approve ${w.runId} \\[--comment TEXT\\]`));
    assert.match(w.out(), new RegExp(`read its work: runner diff ${w.runId}`));
    const rec = await record(f.home, w.runId);
    assert.equal(rec.status, 'awaiting_approval');
    assert.equal(rec.gate.name, 'approve');
    assertHoldsNothing(f, w.runId);
    assert.equal(git(f.project, 'show', `run/${w.runId}:PLAN.md`), 'the plan', "the plan step's work is on the run's branch");
    const ls = await runCli(['runs', 'ls', '--home', f.home]);
    assert.match(ls.stdout, new RegExp(`${w.runId}.*awaiting_approval`), ls.stdout);

    const comment = 'Go ahead; keep "it" small.\nSecond line: $(touch /tmp/never) `id` ${{ secrets.KEY }}';
    const ok = await runCli(['approve', w.runId, '--comment', comment, '--home', f.home]);
    assert.equal(ok.code, 0, ok.stderr);
    assert.match(ok.stdout, new RegExp(`run ${w.runId}: gate approve approved; it goes on in the runner exec waiting for it`));
    assert.equal(await w.done, 0, w.out());
    assert.match(w.out(), /gate approve approved; going on/);
    assert.match(w.out(), /step approve: approved by \S+ \(cli\): Go ahead/, 'the comment is said once, with who decided');
    assert.match(w.out(), new RegExp(`run ${w.runId} succeeded`));

    const done = await record(f.home, w.runId);
    assert.equal(done.status, 'succeeded');
    assert.deepEqual(done.steps.map((s: { id: string; status: string }) => `${s.id}:${s.status}`), ['plan:completed', 'approve:completed', 'implement:completed']);
    assert.equal(done.decisions.length, 1);
    assert.deepEqual([done.decisions[0].decision, done.decisions[0].by.via, done.decisions[0].comment], ['approved', 'cli', comment]);
    assert.deepEqual(done.attempts.map((a: { how: string }) => a.how), ['start', 'approval']);
    assert.equal(git(f.project, 'show', `run/${w.runId}:comment-env.txt`), comment, '$RUNNER_APPROVAL_COMMENT is the comment, byte for byte');
    assert.equal(git(f.project, 'show', `run/${w.runId}:comment-output.txt`), comment, '${{ steps.approve.outputs.comment }} in a run: script is the comment, as data');
    assert.match(git(f.project, 'show', `run/${w.runId}:decision.txt`), /^approved \S+ \(cli\)$/);
    assert.equal(existsSync('/tmp/never'), false);
    assert.deepEqual(containersOfRun(w.runId), []);

    for (const again of ['approve', 'reject']) {
      const r = await runCli([again, w.runId, '--home', f.home]);
      assert.equal(r.code, 2, `${again} again: ${r.stderr}`);
      assert.match(r.stderr, new RegExp(`run ${w.runId} is succeeded, not waiting at a gate: there is nothing to ${again}`));
    }
    assert.equal((await record(f.home, w.runId)).decisions.length, 1);
  } finally {
    w.child.kill('SIGKILL');
  }
});

test('runner reject while exec waits: the run ends rejected (exit 1), the next step never runs, the work is kept on its branch', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, GATED(f.project));
  const w = await execUntilGate(file, f.home);
  try {
    const r = await runCli(['reject', w.runId, '--comment', 'the plan misses the tests', '--home', f.home]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`run ${w.runId}: gate approve rejected; the run ended rejected, its work kept on run/${w.runId}`));
    assert.equal(await w.done, 1, w.out());
    assert.match(w.out(), /rejected by \S+ \(cli\): the plan misses the tests/);
    const rec = await record(f.home, w.runId);
    assert.equal(rec.status, 'rejected');
    assert.equal(rec.error.code, 'rejected');
    assert.equal(rec.steps.some((s: { id: string }) => s.id === 'implement' && (s as unknown as { status: string }).status !== 'skipped'), false, 'implement never ran');
    assert.equal(git(f.project, 'show', `run/${w.runId}:PLAN.md`), 'the plan');
    assertHoldsNothing(f, w.runId);
    const again = await runCli(['approve', w.runId, '--home', f.home]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /is rejected, not waiting at a gate/);
    const resume = await runCli(['resume', w.runId, '--home', f.home]);
    assert.equal(resume.code, 2);
    assert.match(resume.stderr, /it was rejected at a gate \(fork it to try again/);
  } finally {
    w.child.kill('SIGKILL');
  }
});

test('kill -9 of the waiting exec: the run stays awaiting_approval (not interrupted, even after another runner starts); runner approve afterwards runs it to its end', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, GATED(f.project));
  const w = await execUntilGate(file, f.home);
  w.child.kill('SIGKILL');
  assert.equal(await w.done, null);
  // another runner on the home: its start recovers runs whose runner died; a run at a gate is not one of them
  const other = await writePipeline(f, `version: 1\nname: other\nproject: { path: ${f.project}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: a\n    run: "true"\n`, 'other.yaml');
  const o = await runCli(['exec', other, '--json', '--home', f.home]);
  assert.equal(o.code, 0, o.stderr);
  const rec = await record(f.home, w.runId);
  assert.equal(rec.status, 'awaiting_approval', 'a kill -9 at a gate interrupts nothing');
  assert.equal(rec.error, null);
  assertHoldsNothing(f, w.runId);

  const r = await runCli(['approve', w.runId, '--comment', 'after the kill', '--home', f.home]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /gate approve approved; going on here/);
  assert.match(r.stderr, /step plan: completed before \([0-9a-f]{10}\), not run again/);
  assert.match(r.stderr, new RegExp(`run ${w.runId} succeeded`));
  const done = await record(f.home, w.runId);
  assert.equal(done.status, 'succeeded');
  assert.equal(done.steps.filter((s: { id: string }) => s.id === 'plan').length, 1, 'plan ran once');
  assert.equal(git(f.project, 'show', `run/${w.runId}:comment-env.txt`), 'after the kill');
  assert.deepEqual(containersOfRun(w.runId), []);
  assert.deepEqual(otherWorktrees(f), []);
});

test('exec --no-wait-at-gate leaves the run waiting (exit 0) and a gate that is never decided ends rejected by its timeout in a waiting exec', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const left = await runCli(['exec', await writePipeline(f, GATED(f.project)), '--json', '--no-wait-at-gate', '--home', f.home]);
  assert.equal(left.code, 0, left.stderr);
  assert.equal(left.json.status, 'awaiting_approval');
  assert.equal(left.json.gate.name, 'approve');
  assertHoldsNothing(f, left.json.runId);

  const short = await writePipeline(f, GATED(f.project, '3s'), 'short.yaml');
  const r = await runCli(['exec', short, '--json', '--home', f.home]);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'rejected');
  assert.equal(r.json.error.code, 'gate_timed_out');
  const rec = await record(f.home, r.json.runId);
  assert.deepEqual(rec.decisions.map((d: { by: { via: string } }) => d.by.via), ['timeout']);
  const late = await runCli(['approve', r.json.runId, '--home', f.home]);
  assert.equal(late.code, 2);
  assert.match(late.stderr, /is rejected, not waiting at a gate/);
});

test('a comment too long is bad input (exit 2), nothing decided', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const left = await runCli(['exec', await writePipeline(f, GATED(f.project)), '--json', '--no-wait-at-gate', '--home', f.home]);
  assert.equal(left.code, 0, left.stderr);
  const r = await runCli(['approve', left.json.runId, '--comment', 'x'.repeat(8001), '--home', f.home]);
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /the comment is 8001 characters; at most 8000 are kept: shorten it/);
  const rec = await record(f.home, left.json.runId);
  assert.deepEqual([rec.status, rec.decisions], ['awaiting_approval', undefined]);
});
