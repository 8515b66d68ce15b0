/**
 * Flow, for real (docker, git, the runner CLI): a bounded review loop, a
 * loop that hits its bound, retries, parallel steps merged back (and a
 * conflict), fan-out over a planner's list, and a cancel during parallel steps.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, containersOfRun, execPipeline, git, HOLD_UNTIL_RELEASED, pipelineYaml, projectsForThisFile, releaseStep, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** Subjects of the run branch's commits, oldest first, without the part after the colon. */
function subjects(project: string, json: { branch: string; baseSha: string }): string[] {
  return commitsOn(project, json.branch, json.baseSha)
    .reverse()
    .map((c) => c.subject.replace(/\): .*$/, ')'));
}

function branches(project: string, pattern: string): string[] {
  return git(project, 'for-each-ref', '--format=%(refname:short)', `refs/heads/${pattern}`).split('\n').filter(Boolean);
}

const REVIEW_LOOP = (approveAt: number) => `  - id: implement
    run: echo "implementation $RUNNER_ATTEMPT" | tee impl.txt
  - id: review
    outputs: [verdict]
    run: |
      echo "review $RUNNER_ATTEMPT of: $(cat impl.txt)" > REVIEW.md
      if [ "$RUNNER_ATTEMPT" -ge ${approveAt} ]; then echo verdict=APPROVED; else echo verdict=CHANGES_REQUESTED; fi >> "$RUNNER_OUTPUT"
    route:
      output: verdict
      to: { CHANGES_REQUESTED: implement }
  - id: ship
    run: echo shipped > SHIPPED
`;

test('a review loop: changes requested twice, then approved; six step commits in order, attempts numbered', async () => {
  const f = await fixture();
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(REVIEW_LOOP(3))));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.status, 'succeeded');
  assert.deepEqual(subjects(f.project, r.json), [
    'step/implement (runner/base:latest)',
    'step/review (runner/base:latest)',
    'step/implement#2 (runner/base:latest)',
    'step/review#2 (runner/base:latest)',
    'step/implement#3 (runner/base:latest)',
    'step/review#3 (runner/base:latest)',
    'step/ship (runner/base:latest)',
  ]);
  assert.equal(git(f.project, 'show', `${r.json.branch}:REVIEW.md`), 'review 3 of: implementation 3', 'each visit worked on the one before');
  assert.deepEqual(r.json.attempts.map((a: { name: string }) => a.name), ['implement', 'review', 'implement#2', 'review#2', 'implement#3', 'review#3', 'ship']);
  assert.deepEqual(r.json.flow.routes.map((x: { from: string; to: string; value: string; visit: number }) => `${x.from}->${x.to} ${x.value} visit ${x.visit}`), [
    'review->implement CHANGES_REQUESTED visit 2',
    'review->implement CHANGES_REQUESTED visit 3',
  ]);
  assert.equal(r.json.steps.implement.attempts, 3);
  // Every attempt has its own log, marked when shown together.
  const logs = readdirSync(path.join(f.home, 'runs', r.json.runId, 'steps')).filter((n) => n.endsWith('.log')).sort();
  assert.deepEqual(logs, ['implement#2.log', 'implement#3.log', 'implement.log', 'review#2.log', 'review#3.log', 'review.log', 'ship.log']);
  const shown = await runCli(['logs', r.json.runId, '--step', 'implement', '--home', f.home]);
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /── implement ──[\s\S]*── implement#2 ──[\s\S]*── implement#3 ──/);
  const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(show.stdout, /implement#3/);
  assert.match(show.stdout, /review → implement \(verdict=CHANGES_REQUESTED\)/);
});

test('a reviewer that never approves stops at the bound: loop_limit, exit 1, all work committed', async () => {
  const f = await fixture();
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml(REVIEW_LOOP(99))));
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.error.code, 'loop_limit');
  assert.match(r.json.error.message, /sent the run back to implement \(verdict=CHANGES_REQUESTED\), which has used its 3 visits \(max_visits: 3\)/);
  assert.deepEqual({ step: r.json.flow.stop.step, visits: r.json.flow.stop.visits }, { step: 'implement', visits: 3 });
  assert.equal(subjects(f.project, r.json).length, 6, 'six step commits');
  assert.equal(r.json.steps.ship.status, 'skipped');
  assert.match(r.stderr, /loop_limit|used its 3 visits/);
});

test('a flaky step succeeds on its third attempt, each attempt starting from the work the one before committed', async () => {
  const f = await fixture();
  const r = await execPipeline(
    f,
    await writePipeline(
      f,
      pipelineYaml(`  - id: flaky
    retries: { max: 2, backoff: 1s }
    run: |
      echo "try $RUNNER_ATTEMPT saw: $(ls try-*.txt 2>/dev/null | tr '\\n' ' ')" > "try-$RUNNER_ATTEMPT.txt"
      [ "$RUNNER_ATTEMPT" -ge 3 ]
  - id: after
    run: echo after > after.txt
`),
    ),
  );
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(r.json.attempts.map((a: { name: string; status: string }) => `${a.name} ${a.status}`), ['flaky failed', 'flaky#2 failed', 'flaky#3 completed', 'after completed']);
  assert.deepEqual(r.json.attempts.slice(0, 2).map((a: { retryInMs: number }) => a.retryInMs), [1000, 2000], 'the backoff doubles');
  assert.equal(git(f.project, 'show', `${r.json.branch}:try-3.txt`), 'try 3 saw: try-1.txt try-2.txt');
  assert.match(r.stderr, /step flaky failed \(exit 1\): it runs again in 1(\.0)?s \(attempt 2\)/);
});

test('three parallel steps editing different files merge cleanly, in file order; their branches and worktrees go', async () => {
  const f = await fixture();
  // api holds until ui and docs have run, so the three overlap however slowly their containers start (api's
  // sleep of 2 s made them overlap only when the machine started the other two within it)
  let runId: string | undefined;
  const ran = new Set<string>();
  const r = await execPipeline(
    f,
    await writePipeline(
      f,
      pipelineYaml(`  - id: setup
    run: echo base > base.txt
  - id: api
    needs: [setup]
    run: |
      ${HOLD_UNTIL_RELEASED}
      echo api > api.txt
  - id: ui
    needs: [setup]
    run: echo ui > ui.txt; echo "ui ran"
  - id: docs
    needs: [setup]
    run: echo docs > docs.txt; echo "docs ran"
  - id: integrate
    needs: [api, ui, docs]
    run: cat api.txt ui.txt docs.txt base.txt > all.txt
`),
    ),
    [],
    {
      onLine: (line) => {
        runId ??= /^runner: run (\S+):/.exec(line)?.[1];
        const m = /^\[(api|ui|docs)\] (holding until released|ui ran|docs ran)$/.exec(line);
        if (m) ran.add(m[1]!);
        if (runId && ran.size === 3 && !ran.has('released')) ran.add('released'), releaseStep(runId, 'api');
      },
    },
  );
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:all.txt`), 'api\nui\ndocs\nbase');
  const s = subjects(f.project, r.json);
  assert.deepEqual(s.filter((x) => x.startsWith('merge/')), ['api', 'ui', 'docs'].map((id) => `merge/${id} (run/${r.json.runId}+${id})`), 'merged in file order, whatever order they ended in');
  const [api, ui, docs] = ['api', 'ui', 'docs'].map((id) => r.json.attempts.find((a: { name: string }) => a.name === id));
  assert.ok(Date.parse(ui.startedAt) < Date.parse(api.finishedAt) && Date.parse(docs.startedAt) < Date.parse(api.finishedAt), 'they ran at once');
  assert.equal(api.lane.merge, 'merged');
  assert.deepEqual(branches(f.project, `run/${r.json.runId}+*`), [], 'lane branches are deleted once merged');
  assert.deepEqual(readdirSync(path.join(f.home, 'worktrees')), [], 'no worktree left');
});

test('two parallel steps editing the same line fail the run with the file named; the unmerged branch kept, the other\'s work on the run branch', async () => {
  const f = await fixture();
  const r = await execPipeline(
    f,
    await writePipeline(
      f,
      pipelineYaml(`  - id: left
    needs: []
    run: printf 'left\\ntwo\\n' > data.txt
  - id: right
    needs: []
    run: printf 'right\\ntwo\\n' > data.txt
  - id: after
    needs: [left, right]
    run: echo never > never.txt
`),
    ),
  );
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.error.code, 'merge_conflict');
  assert.match(r.json.error.message, /step right's work conflicts with the run's in data\.txt/);
  assert.deepEqual(r.json.flow.stop.files, ['data.txt']);
  assert.equal(r.json.steps.after.status, 'skipped');
  const kept = branches(f.project, `run/${r.json.runId}+*`).sort();
  assert.deepEqual(kept, [`run/${r.json.runId}+right`], 'left was merged (its work is on the run branch); right was not, and is kept');
  assert.deepEqual(r.json.flow.keptBranches.sort(), kept);
  assert.equal(git(f.project, 'show', `run/${r.json.runId}+right:data.txt`), 'right\ntwo');
  assert.equal(git(f.project, 'show', `${r.json.branch}:data.txt`), 'left\ntwo', 'the run branch has what merged');
  assert.deepEqual(readdirSync(path.join(f.home, 'worktrees')), []);
});

test('fan-out: a planner lists three tasks, three instances each add a file; all on the run branch, outputs as lists', async () => {
  const f = await fixture();
  const r = await execPipeline(
    f,
    await writePipeline(
      f,
      pipelineYaml(`  - id: plan
    outputs: [tasks]
    run: echo 'tasks=["alpha", "beta", "gamma"]' >> "$RUNNER_OUTPUT"
  - id: build
    for_each: \${{ steps.plan.outputs.tasks }}
    max_parallel: 2
    outputs: [made]
    run: |
      echo "task \${{ item }} ($RUNNER_ITEM_INDEX)" > "\${{ item }}.txt"
      echo "made=\${{ item }}.txt" >> "$RUNNER_OUTPUT"
  - id: collect
    run: echo "\${{ steps.build.outputs.made }}" > made.json
`),
    ),
  );
  assert.equal(r.code, 0, r.stderr);
  for (const [i, t] of ['alpha', 'beta', 'gamma'].entries()) assert.equal(git(f.project, 'show', `${r.json.branch}:${t}.txt`), `task ${t} (${i})`);
  assert.equal(git(f.project, 'show', `${r.json.branch}:made.json`), '["alpha.txt","beta.txt","gamma.txt"]');
  assert.deepEqual(r.json.steps.build.instances.map((x: { item: string; status: string }) => `${x.item} ${x.status}`), ['alpha completed', 'beta completed', 'gamma completed']);
  const s = subjects(f.project, r.json);
  for (const n of ['build[0]', 'build[1]', 'build[2]']) assert.ok(s.includes(`step/${n} (runner/base:latest)`), `${n} committed: ${s.join(', ')}`);
});

test('a planner whose list is over the bound fails, clearly, and nothing fans out', async () => {
  const f = await fixture();
  const r = await execPipeline(
    f,
    await writePipeline(
      f,
      pipelineYaml(`  - id: plan
    outputs: [tasks]
    run: echo 'tasks=["a", "b", "c", "d"]' >> "$RUNNER_OUTPUT"
  - id: build
    for_each: \${{ steps.plan.outputs.tasks }}
    max_items: 3
    run: touch "\${{ item }}"
`),
    ),
  );
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.error.code, 'bad_list');
  assert.match(r.json.error.message, /step plan made a for_each list that cannot be used: output tasks, the for_each list of step build: it has 4 items, more than the 3 the step takes \(max_items: 3\)/);
  assert.equal(r.json.steps.plan.status, 'failed');
  assert.equal(r.json.steps.build.status, 'skipped');
});

test('Ctrl-C during parallel steps stops them all, commits each one\'s work on its branch, removes every worktree', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: one
    needs: []
    run: |
      echo one > one.txt
      echo "one running"
      sleep 300
  - id: two
    needs: []
    run: |
      echo two > two.txt
      echo "two running"
      sleep 300
  - id: after
    needs: [one, two]
    run: echo never > never.txt
`),
  );
  const seen = new Set<string>();
  let sent = false;
  const r = await execPipeline(f, file, [], {
    onLine: (line, child) => {
      const m = /\[(one|two)\] (one|two) running/.exec(line);
      if (m) seen.add(m[1]!);
      if (seen.size === 2 && !sent) {
        sent = true;
        child.kill('SIGINT');
      }
    },
  });
  assert.ok(sent, 'both steps started');
  assert.equal(r.code, 130, r.stderr);
  assert.equal(r.json.status, 'canceled');
  assert.equal(r.json.steps.one.status, 'canceled');
  assert.equal(r.json.steps.two.status, 'canceled');
  assert.equal(r.json.steps.after.status, 'skipped');
  for (const id of ['one', 'two']) {
    const b = `run/${r.json.runId}+${id}`;
    assert.equal(git(f.project, 'show', `${b}:${id}.txt`), id, `${id}'s work is committed on ${b}`);
    assert.ok(r.json.flow.keptBranches.includes(b));
  }
  assert.deepEqual(containersOfRun(r.json.runId), []);
  assert.equal(existsSync(path.join(f.home, 'worktrees')) ? readdirSync(path.join(f.home, 'worktrees')).length : 0, 0, 'every worktree removed');
});
