/** Crash recovery: a runner killed with -9 loses nothing, and a live run of another process is never touched. */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, commitsOn, containersOfRun, execPipeline, git, pipelineYaml, projectsForThisFile, runCli, writePipeline, otherWorktrees } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** Starts `runner exec` and resolves with the child and its run id once `marker` is printed. */
function startRun(file: string, home: string, marker: string): Promise<{ child: ReturnType<typeof spawn>; runId: string; done: Promise<number | null> }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, 'exec', file, '--home', home], { env: { ...process.env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const done = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
    let out = '';
    let runId = '';
    const seen = (b: Buffer) => {
      out += b.toString();
      runId ||= /run (\d{8}-\d{6}-[a-z0-9]{6})/.exec(out)?.[1] ?? '';
      if (runId && out.includes(marker)) resolve({ child, runId, done });
    };
    child.stdout.on('data', seen);
    child.stderr.on('data', seen);
    setTimeout(() => reject(new Error(`no ${marker} in 60 s: ${out}`)), 60_000).unref();
  });
}

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
      echo "slow step running"
      sleep 4
      echo done > done.txt
`),
  );
  const { runId, done } = await startRun(file, f.home, '[slow] slow step running');
  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.equal(JSON.parse(ls.stdout)[0].status, 'running');
  assert.equal(containersOfRun(runId).length, 1, 'the live run keeps its container');
  const other = await execPipeline(f, await writePipeline(f, pipelineYaml('  - id: quick\n    run: "true"\n'), 'quick.yaml'));
  assert.equal(other.code, 0, other.stderr);
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
  const file = await writePipeline(f, pipelineYaml(`  - id: slow\n    run: |\n      echo "slow step running"\n      sleep 3\n      echo ok > ok.txt\n`));
  const { runId, done } = await startRun(file, f.home, '[slow] slow step running');
  const alias = path.join(f.root, 'home-alias');
  await symlink(f.home, alias);
  const ls = await runCli(['runs', 'ls', '--home', alias, '--json']);
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
      sleep 1
      echo "two running"
      sleep 300
`),
  );
  const { child, runId, done } = await startRun(file, f.home, '[two] two running');
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
