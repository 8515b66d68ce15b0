/**
 * Attacks on approval gates, played for real (real engine, real git, the
 * runner CLI as its own processes); every step is hostile:
 *   - a step before the gate forges a decision: a run.json in its worktree, a
 *     write towards the runner home, outputs named like the gate's: the gate
 *     still waits, nothing decided, and what follows it reads only the
 *     person's words;
 *   - a comment of control characters never drives the terminal of the exec
 *     that waits, nor of runner runs show;
 *   - two `runner approve` processes at once: exactly one decides;
 *   - a decision after the deadline is refused, the run rejected by its timeout.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { assertHoldsNothing, execUntilGate, GATED, record } from '../fixtures/gates.js';
import { git, IMAGE, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('a step before the gate forges a decision (a run.json, the runner home, outputs named like the gate\'s): the gate still waits, and what follows reads only the person\'s decision', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const forged = JSON.stringify({ status: 'awaiting_approval', gate: null, decisions: [{ step: 'approve', decision: 'approved', by: { via: 'cli', user: 'root' }, at: '2099-01-01T00:00:00.000Z', comment: 'FORGED' }] });
  const file = await writePipeline(
    f,
    `version: 1
name: forger
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE}, timeout: 2m, resources: { memory: 256m, cpus: 1, pids: 128 } }
steps:
  - id: forge
    outputs: [decision, comment, by]
    run: |
      printf '%s' '${forged}' > run.json
      mkdir -p .runner runs && printf '%s' '${forged}' > .runner/run.json && printf '%s' '${forged}' > runs/run.json
      # towards the runner home: it is not mounted, so these fail; the step shrugs
      mkdir -p '${f.home}/runs' 2>/dev/null && printf '%s' '${forged}' > '${f.home}/runs/forged.json' 2>/dev/null || true
      for d in /home/agent/.runner /run /tmp; do printf '%s' '${forged}' > "$d/run.json" 2>/dev/null || true; done
      echo "decision=approved" >> "$RUNNER_OUTPUT"
      echo "comment=FORGED" >> "$RUNNER_OUTPUT"
      echo "by=root (cli)" >> "$RUNNER_OUTPUT"
      echo "RUNNER_APPROVAL_COMMENT=FORGED" > .env
  - id: approve
    approval: { prompt: "Is the forge step's work fine?", timeout: 1h }
  - id: after
    run: |
      printf '%s|%s|%s|%s' "$RUNNER_APPROVAL_COMMENT" "\${{ steps.approve.outputs.comment }}" "\${{ steps.approve.outputs.decision }}" "\${{ steps.forge.outputs.comment }}" > seen.txt
`,
  );
  const left = await runCli(['exec', file, '--json', '--no-wait-at-gate', '--home', f.home]);
  assert.equal(left.code, 0, left.stderr);
  assert.equal(left.json.status, 'awaiting_approval', 'the forged decision passed nothing');
  const id = left.json.runId;
  const rec = await record(f.home, id);
  assert.equal(rec.decisions, undefined, 'no decision on record');
  assert.equal(rec.gate.name, 'approve');
  assert.equal(existsSync(`${f.home}/runs/forged.json`), false, 'the step reached nothing of the runner home');
  assert.match(git(f.project, 'show', `run/${id}:run.json`), /FORGED/, 'its forgery is only a file on its branch');
  assertHoldsNothing(f, id);

  const a = await runCli(['approve', id, '--comment', 'the real one', '--home', f.home]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(git(f.project, 'show', `run/${id}:seen.txt`), 'the real one|the real one|approved|FORGED', "the gate's outputs are the person's; the forge step's own stay its own");
  const done = await record(f.home, id);
  assert.equal(done.status, 'succeeded');
  assert.deepEqual(done.decisions.map((d: { comment: string }) => d.comment), ['the real one']);
});

test('a comment of control characters never drives the terminal: the waiting exec and runner runs show print it made visible; the step gets it byte for byte', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const w = await execUntilGate(await writePipeline(f, GATED(f.project)), f.home);
  try {
    const comment = 'fine\x1b]0;owned title\x07\x1b[2J\x1b[31m\rrunner: run 1 succeeded\x9b31m';
    const a = await runCli(['approve', w.runId, '--comment', comment, '--home', f.home]);
    assert.equal(a.code, 0, a.stderr);
    assert.equal(await w.done, 0, w.out());
    assert.match(w.out(), /step approve: approved by \S+ \(cli\): fine/);
    assert.doesNotMatch(w.out(), /[\x07\x1b\x9b]|\r(?!\n)/, 'no raw ESC, BEL, CSI or lone CR reaches the terminal');
    assert.doesNotMatch(w.out(), /^runner: run 1 succeeded/m, 'the comment cannot start a line that looks like the runner\'s');
    assert.equal(git(f.project, 'show', `run/${w.runId}:comment-env.txt`), comment);
    for (const args of [['runs', 'show', w.runId], ['runs', 'ls']]) {
      const r = await runCli([...args, '--home', f.home]);
      assert.equal(r.code, 0, r.stderr);
      assert.doesNotMatch(r.stdout + r.stderr, /[\x07\x1b\x9b]|\r(?!\n)/, `runner ${args.join(' ')}`);
    }
    // --json is data: JSON escapes C0 (ESC, BEL, CR) and the comment decodes back byte for byte. (A C1 character such
    // as U+009B stays raw in JSON.stringify's text, as it does for any step output in runs show --json: not checked here.)
    const j = await runCli(['runs', 'show', w.runId, '--json', '--home', f.home]);
    assert.doesNotMatch(j.stdout, /[\x00-\x08\x0b-\x1f]/);
    assert.equal(JSON.parse(j.stdout).decisions[0].comment, comment);
  } finally {
    w.child.kill('SIGKILL');
  }
});

test('two runner approve processes at once: exactly one decides (and runs the rest), the other is refused', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, GATED(f.project));
  for (let i = 0; i < 3; i++) {
    const left = await runCli(['exec', file, '--json', '--no-wait-at-gate', '--home', f.home]);
    assert.equal(left.code, 0, left.stderr);
    const id = left.json.runId;
    const [x, y] = await Promise.all([
      runCli(['approve', id, '--comment', 'x', '--home', f.home]),
      runCli([i === 2 ? 'reject' : 'approve', id, '--comment', 'y', '--home', f.home]),
    ]);
    const codes = [x.code, y.code].sort();
    const winner = x.code === 0 ? x : y;
    assert.deepEqual(codes, [0, 2], `exactly one decides:\n${x.stderr}\n---\n${y.stderr}`);
    const loser = x.code === 0 ? y : x;
    assert.match(loser.stderr, /not waiting at a gate|already (approved|rejected)|being run or continued right now/);
    const rec = await record(f.home, id);
    assert.equal(rec.decisions.length, 1);
    assert.equal(rec.decisions[0].comment, winner === x ? 'x' : 'y');
    assert.ok(['succeeded', 'rejected'].includes(rec.status), rec.status);
    if (rec.status === 'succeeded') assert.equal(git(f.project, 'show', `run/${id}:comment-env.txt`), rec.decisions[0].comment);
  }
});

test('a decision after the deadline is refused as timed out; the run ends rejected by its timeout, its work kept', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const left = await runCli(['exec', await writePipeline(f, GATED(f.project, '2s')), '--json', '--no-wait-at-gate', '--home', f.home]);
  assert.equal(left.code, 0, left.stderr);
  const id = left.json.runId;
  const deadline = Date.parse(left.json.gate.deadline);
  await new Promise((r) => setTimeout(r, Math.max(0, deadline - Date.now() + 200)));
  const late = await runCli(['approve', id, '--comment', 'late', '--home', f.home]);
  assert.equal(late.code, 2, late.stderr);
  assert.match(late.stderr, new RegExp(`the gate approve of run ${id} waited until \\S+ and timed out: the run is rejected, its work kept on run/${id}`));
  const rec = await record(f.home, id);
  assert.deepEqual([rec.status, rec.error.code], ['rejected', 'gate_timed_out']);
  assert.equal(git(f.project, 'show', `run/${id}:PLAN.md`), 'the plan');
  const resume = await runCli(['resume', id, '--home', f.home]);
  assert.equal(resume.code, 2, 'a rejected run is not resumed');
});
