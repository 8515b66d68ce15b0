/** Crash recovery: a runner killed with -9 loses nothing, and a live run of another process is never touched. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, commitsOn, containersOfRun, execPipeline, git, HOLD_UNTIL_RELEASED, pipelineYaml, projectsForThisFile, releaseStep, runCli, startRun, writePipeline, otherWorktrees } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('kill -9 mid-step, then runs ls: no container, run interrupted, partial work committed, no worktree', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: first
    run: echo one > one.txt
  - id: long
    run: |
      echo partial > partial.txt
      echo "long step running"
      sleep 300
`),
  );
  const { child, runId, done } = await startRun(file, f.home, '[long] long step running');
  child.kill('SIGKILL');
  await done;
  assert.equal(containersOfRun(runId).length, 1, 'the killed runner left its container running');

  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stderr, new RegExp(`run ${runId} was interrupted`));
  const listed = JSON.parse(ls.stdout);
  assert.equal(listed[0].status, 'interrupted');
  assert.deepEqual(containersOfRun(runId), [], 'no container left');
  assert.equal(existsSync(path.join(f.home, 'worktrees', runId)), false, 'no worktree left');
  assert.deepEqual(otherWorktrees(f), []);

  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
  assert.equal(rec.status, 'interrupted');
  assert.deepEqual(rec.steps.map((s: any) => [s.id, s.status]), [['first', 'completed'], ['long', 'interrupted']]);
  const [last] = commitsOn(f.project, `run/${runId}`, rec.baseSha);
  assert.equal(last!.subject, 'step/long (runner): interrupted');
  assert.match(last!.body, /Runner-Status: interrupted/);
  assert.equal(git(f.project, 'show', `run/${runId}:partial.txt`), 'partial', 'the step\'s partial work is on the branch');

  const again = await runCli(['runs', 'ls', '--home', f.home]);
  assert.doesNotMatch(again.stderr, /interrupted/, 'recovery happens once');
});

test('reconciliation in one runner never touches another runner\'s live run', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: slow
    run: |
      ${HOLD_UNTIL_RELEASED}
      echo done > done.txt
`),
  );
  const { runId, done } = await startRun(file, f.home, '[slow] holding until released');
  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.equal(JSON.parse(ls.stdout)[0].status, 'running');
  assert.equal(containersOfRun(runId).length, 1, 'the live run keeps its container');
  const other = await execPipeline(f, await writePipeline(f, pipelineYaml('  - id: quick\n    run: "true"\n'), 'quick.yaml'));
  assert.equal(other.code, 0, other.stderr);
  assert.equal(containersOfRun(runId).length, 1, 'the live run still has its container');
  releaseStep(runId, 'slow');
  assert.equal(await done, 0, 'the live run finished normally');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
  assert.equal(rec.status, 'succeeded');
  assert.equal(git(f.project, 'show', `run/${runId}:done.txt`), 'done');
});

test('a second Ctrl-C kills the step at once, and the next command leaves no container behind', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(`  - id: stubborn\n    run: |\n      trap '' TERM INT\n      echo "stubborn running"\n      sleep 300\n`));
  const { child, runId, done } = await startRun(file, f.home, '[stubborn] stubborn running');
  child.kill('SIGINT');
  await new Promise((r) => setTimeout(r, 300));
  child.kill('SIGINT');
  assert.equal(await done, 130);
  await runCli(['runs', 'ls', '--home', f.home]);
  assert.deepEqual(containersOfRun(runId), []);
});

test('a home named through a symlink is the same home: its live run is not taken for dead', async () => {
  const f = await fixture();
  const { symlink } = await import('node:fs/promises');
  const file = await writePipeline(f, pipelineYaml(`  - id: slow\n    run: |\n      ${HOLD_UNTIL_RELEASED}\n      echo ok > ok.txt\n`));
  const { runId, done } = await startRun(file, f.home, '[slow] holding until released');
  const alias = path.join(f.root, 'home-alias');
  await symlink(f.home, alias);
  const ls = await runCli(['runs', 'ls', '--home', alias, '--json']);
  releaseStep(runId, 'slow');
  assert.equal(JSON.parse(ls.stdout)[0].status, 'running');
  assert.equal(await done, 0);
  assert.equal(git(f.project, 'show', `run/${runId}:ok.txt`), 'ok');
});

test('kill -9 during parallel steps: each lane\'s leftovers committed on its branch (kept), every worktree gone', async () => {
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
`),
  );
  // both lanes running (a second's head start for the first one held only on a quick machine)
  const { child, runId, done } = await startRun(file, f.home, ['[one] one running', '[two] two running']);
  child.kill('SIGKILL');
  await done;
  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stderr, new RegExp(`run ${runId} was interrupted .*the leftovers of (one, two|two, one) committed`));
  assert.deepEqual(containersOfRun(runId), [], 'no container left');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
  assert.deepEqual(rec.steps.map((s: any) => `${s.id} ${s.status}`).sort(), ['one interrupted', 'two interrupted']);
  for (const id of ['one', 'two']) {
    assert.equal(git(f.project, 'show', `run/${runId}+${id}:${id}.txt`), id, `${id}'s leftovers are on its branch`);
    assert.ok(rec.flow.keptBranches.includes(`run/${runId}+${id}`));
    assert.equal(existsSync(path.join(f.home, 'worktrees', `${runId}.${id}`)), false);
  }
  assert.deepEqual(otherWorktrees(f), [], 'only the project\'s own checkout (and the pool\'s) is left');
});

/** Sleeps the thread (not the event loop's turn): a poll that yields the CPU yet sees a window of a few milliseconds. */
function pause(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

test('kill -9 while a finished run\'s worktree goes back to the pool: the run stays succeeded, its branch ends with its step, its worktree is gone', { timeout: 600_000 }, async (t) => {
  // The step writes RESULT.md, changes a tracked file and makes 30,000 files: giving that tree back takes a while.
  const steps = `  - id: build
    run: |
      echo done > RESULT.md
      echo changed >> data.txt
      for d in $(seq 1 30); do mkdir -p many/$d && (cd many/$d && seq 1 1000 | xargs touch); done
      echo "files made"
`;
  const tries = 3;
  for (let attempt = 1; attempt <= tries; attempt++) {
    const f = await fixture();
    const file = await writePipeline(f, pipelineYaml(steps));
    const { child, runId, done } = await startRun(file, f.home, '[build] files made');
    const wt = path.join(f.home, 'worktrees', runId);
    // Cleanup is under way once any of what the step left is gone while the worktree is still there.
    const sentinels = ['RESULT.md', 'many/1/1', 'many/15/1', 'many/30/1000'].map((p) => path.join(wt, p));
    const renewals = () => readdirSync(path.dirname(wt)).filter((n) => n.startsWith(`${runId}+renew-`));
    let hit = false;
    for (const end = Date.now() + 300_000; Date.now() < end && child.exitCode === null; pause(1)) {
      const there = existsSync(wt) || renewals().length > 0;
      if (!there) continue;
      if (sentinels.some((p) => !existsSync(p))) {
        child.kill('SIGKILL');
        hit = true;
        break;
      }
    }
    await done;
    // Proof the kill landed in the give-back: the tree is there, half taken apart.
    const halfCleaned = hit && (existsSync(wt) || renewals().length > 0) && sentinels.some((p) => !existsSync(p));
    if (!halfCleaned) {
      if (attempt < tries) continue;
      assert.fail(`in ${tries} tries the kill never landed while the worktree was being given back (the run ended first): the test proved nothing`);
    }
    t.diagnostic(`try ${attempt}: killed with ${sentinels.filter((p) => !existsSync(p)).map((p) => path.relative(wt, p)).join(', ')} gone${renewals().length ? ', its top level being made anew' : ''}`);
    const before = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));

    const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
    assert.equal(ls.code, 0, ls.stderr);
    const commits = commitsOn(f.project, `run/${runId}`, before.baseSha);
    assert.deepEqual(commits.map((c) => c.subject), ['step/build (runner/base:latest): completed'], 'the branch ends with the step\'s commit, no recovery commit');
    assert.equal(git(f.project, 'show', `run/${runId}:RESULT.md`), 'done');
    assert.equal(before.status, 'succeeded', 'the record said how the run ended before its cleanup began');
    assert.equal(before.cleanup?.workspace, 'remove', 'and that its worktree was being given back or removed');
    assert.match(ls.stderr, new RegExp(`run ${runId} had ended \\(succeeded\\) when its runner stopped during its cleanup: the cleanup is finished, nothing committed`));
    assert.doesNotMatch(ls.stderr, /was interrupted/);
    assert.equal(JSON.parse(ls.stdout)[0].status, 'succeeded');
    const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
    assert.equal(rec.status, 'succeeded');
    assert.equal(rec.error, null);
    assert.equal(rec.cleanup, null);
    assert.equal(rec.finishedAt, before.finishedAt, 'it ended when its outcome was decided');

    assert.equal(git(f.project, 'rev-parse', `run/${runId}`), rec.headSha);
    assert.equal(git(f.project, 'show', `run/${runId}:data.txt`), 'one\ntwo\nchanged');
    assert.equal(git(f.project, 'ls-tree', '-r', '--name-only', `run/${runId}`, 'many').split('\n').length, 30_000);

    assert.equal(existsSync(wt), false, 'the half-cleaned worktree is removed');
    assert.deepEqual(renewals(), [], 'and what its give-back moved beside it');
    assert.deepEqual(otherWorktrees(f), []);
    const poolDir = path.join(f.home, 'pool');
    for (const key of await readdir(poolDir).catch(() => [] as string[])) {
      for (const slot of await readdir(path.join(poolDir, key))) {
        assert.equal(existsSync(path.join(poolDir, key, slot, 'RESULT.md')) || existsSync(path.join(poolDir, key, slot, 'many')), false, 'no half-cleaned tree is in the pool');
      }
    }
    const again = await runCli(['runs', 'ls', '--home', f.home]);
    assert.doesNotMatch(again.stderr, /had ended|interrupted/, 'recovery happens once');
    const next = await execPipeline(f, await writePipeline(f, pipelineYaml('  - id: quick\n    run: cat data.txt\n'), 'quick.yaml'));
    assert.equal(next.code, 0, next.stderr);
    return;
  }
});

test('a run directory without its record: kept while a live process makes it, removed once that process is killed', async () => {
  const f = await fixture();
  const runs = path.join(f.home, 'runs');
  await mkdir(runs, { recursive: true });
  const dead = path.join(runs, '20240101-000000-deadaa');
  // as a runner killed between making a run's directory and writing its record leaves it
  await mkdir(path.join(dead, 'steps'), { recursive: true });
  await mkdir(path.join(dead, 'io'));
  await writeFile(path.join(dead, 'run.json.tmp-4242-0123456789ab'), '{"runId": "20240101-');
  // A real process making a run the way runner serve accepts a trigger: owner lock, directory, then (here: never) the record.
  const liveId = '20240101-000001-liveaa';
  const maker = spawn(process.execPath, ['--input-type=module', '-e', `
    const { holdOwnerLock } = await import(${JSON.stringify(path.resolve(path.dirname(CLI), '../src/run/owner-lock.js'))});
    const { mkdir } = await import('node:fs/promises');
    await holdOwnerLock(${JSON.stringify(f.home)}, ${JSON.stringify(liveId)});
    await mkdir(${JSON.stringify(path.join(runs, liveId, 'steps'))}, { recursive: true });
    console.log('making');
    setInterval(() => {}, 1000);
  `], { stdio: ['ignore', 'pipe', 'inherit'] });
  const exited = new Promise((r) => maker.on('close', r));
  await new Promise<void>((resolve, reject) => {
    maker.stdout.on('data', (b) => String(b).includes('making') && resolve());
    maker.on('close', () => reject(new Error('the maker exited early')));
  });
  const kept = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(kept.code, 0, kept.stderr);
  assert.match(kept.stderr, /removed 1 run directory without a record/);
  assert.equal(existsSync(dead), false, 'the crash\'s directory is removed');
  assert.equal(existsSync(path.join(runs, liveId)), true, 'the one a live process is making is not');
  maker.kill('SIGKILL');
  await exited;
  const gone = await runCli(['runs', 'ls', '--home', f.home]);
  assert.equal(gone.code, 0, gone.stderr);
  assert.match(gone.stderr, /removed 1 run directory without a record/);
  assert.equal(existsSync(path.join(runs, liveId)), false, 'once its maker is killed, it goes too');
  assert.deepEqual(await readdir(runs), []);
});

test('kill -9 while a merged lane\'s worktree is being removed: nothing of it committed, no branch made again, the worktree gone', { timeout: 600_000 }, async (t) => {
  const steps = `  - id: one
    needs: []
    run: |
      echo one > RESULT-one.md
      for d in $(seq 1 30); do mkdir -p many/$d && (cd many/$d && seq 1 1000 | xargs touch); done
      echo "one made its files"
  - id: two
    needs: []
    run: echo two > two.txt
`;
  const tries = 3;
  for (let attempt = 1; attempt <= tries; attempt++) {
    const f = await fixture();
    const { child, runId, done } = await startRun(await writePipeline(f, pipelineYaml(steps)), f.home, '[one] one made its files');
    const lane = path.join(f.home, 'worktrees', `${runId}.one`);
    const sentinels = ['RESULT-one.md', 'many/1/1', 'many/15/1', 'many/30/1000'].map((p) => path.join(lane, p));
    let hit = false;
    for (const end = Date.now() + 300_000; Date.now() < end && child.exitCode === null; pause(1)) {
      if (existsSync(lane) && sentinels.some((p) => !existsSync(p))) {
        child.kill('SIGKILL');
        hit = true;
        break;
      }
    }
    await done;
    if (!(hit && existsSync(lane) && sentinels.some((p) => !existsSync(p)))) {
      if (attempt < tries) continue;
      assert.fail(`in ${tries} tries the kill never landed while the lane's worktree was being removed: the test proved nothing`);
    }
    t.diagnostic(`try ${attempt}: killed with ${sentinels.filter((p) => !existsSync(p)).map((p) => path.relative(lane, p)).join(', ')} gone`);
    const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
    assert.equal(ls.code, 0, ls.stderr);
    assert.doesNotMatch(ls.stderr, /leftovers of [^\n]*\bone\b[^\n]* committed/, 'nothing of the lane being removed is committed');
    const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
    assert.equal(rec.status, 'interrupted', 'the run itself had not ended');
    assert.equal(git(f.project, 'branch', '--list', `run/${runId}+one`), '', 'the merged lane\'s branch is not made again from a half-removed tree');
    assert.ok(!rec.flow.keptBranches.includes(`run/${runId}+one`));
    assert.equal(git(f.project, 'show', `run/${runId}:RESULT-one.md`), 'one', 'its work is on the run\'s branch, merged');
    assert.equal(existsSync(lane), false, 'the lane worktree is removed');
    assert.deepEqual(otherWorktrees(f), []);
    return;
  }
});
