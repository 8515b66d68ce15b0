/** Lifecycle hooks: host-side scripts from the pipeline file, with their failure rules, timeout and output cap. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, pipelineYaml, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

function withHooks(hooks: string, steps = '  - id: work\n    run: echo work > work.txt\n'): string {
  return pipelineYaml(steps).replace('steps:', `hooks:\n${hooks}\nsteps:`);
}

async function marks(f: Fixture): Promise<string> {
  const file = path.join(f.root, 'marks.txt');
  return existsSync(file) ? readFile(file, 'utf8') : '';
}

test('every hook runs in order in the workspace, with the run\'s identity and no other host variable', async () => {
  const f = await fixture();
  const m = path.join(f.root, 'marks.txt');
  const file = await writePipeline(
    f,
    withHooks(`  after_create: echo "after_create $PWD $RUNNER_WORKSPACE" >> ${m}
  before_run: echo "before_run $RUNNER_RUN_ID attempt=$RUNNER_ATTEMPT task=[$RUNNER_TASK_ID] host=[$RUNNER_HOST_ONLY]" >> ${m}
  after_run: echo "after_run $(ls | tr "\\n" " ")" >> ${m}
  before_remove: echo "before_remove" >> ${m}`),
  );
  const r = await execPipeline(f, file, [], { env: { RUNNER_HOST_ONLY: 'leak' } });
  assert.equal(r.code, 0, r.stderr);
  const lines = (await marks(f)).trim().split('\n');
  const wt = path.join(f.home, 'worktrees', r.json.runId);
  assert.deepEqual(lines.map((l) => l.split(' ')[0]), ['after_create', 'before_run', 'after_run', 'before_remove']);
  assert.ok(lines[0]!.includes(`${wt} ${wt}`), lines[0]);
  assert.equal(lines[1], `before_run ${r.json.runId} attempt=1 task=[] host=[]`);
  assert.match(lines[2]!, /work\.txt/, 'after_run sees what the steps left');
  const record = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  assert.deepEqual(record.hooks.map((h: any) => [h.name, h.ok]), [['after_create', true], ['before_run', true], ['after_run', true], ['before_remove', true]]);
});

test('after_create failing removes the new workspace and fails the run; no step runs', async () => {
  const f = await fixture();
  const file = await writePipeline(f, withHooks(`  after_create: echo "cannot prepare" >&2; exit 7`));
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.error.code, 'hook_failed');
  assert.deepEqual(Object.keys(r.json.steps), []);
  assert.equal(existsSync(path.join(f.home, 'worktrees', r.json.runId)), false);
  assert.match(r.stderr, /hook after_create exited 7/);
  assert.match(r.stderr, /\[hook:after_create\] cannot prepare/);
});

test('before_run failing fails the run and keeps the workspace', async () => {
  const f = await fixture();
  const file = await writePipeline(f, withHooks(`  before_run: exit 3`));
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.error.code, 'hook_failed');
  assert.ok(existsSync(path.join(f.home, 'worktrees', r.json.runId)), 'the workspace is kept');
  assert.equal(r.json.worktree, path.join(f.home, 'worktrees', r.json.runId));
});

test('after_run and before_remove failing are logged and ignored', async () => {
  const f = await fixture();
  const file = await writePipeline(f, withHooks(`  after_run: exit 4\n  before_remove: exit 5`));
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /hook after_run exited 4; ignored/);
  assert.match(r.stderr, /hook before_remove exited 5; ignored/);
  assert.equal(existsSync(path.join(f.home, 'worktrees', r.json.runId)), false);
});

test('after_run and before_remove run even when the run is canceled', async () => {
  const f = await fixture();
  const m = path.join(f.root, 'marks.txt');
  const file = await writePipeline(
    f,
    withHooks(`  after_run: echo after_run >> ${m}\n  before_remove: echo before_remove >> ${m}`, '  - id: long\n    run: echo go; sleep 300\n'),
  );
  let sent = false;
  const r = await execPipeline(f, file, [], {
    onLine: (line, child) => {
      if (line.includes('[long] go') && !sent) {
        sent = true;
        child.kill('SIGINT');
      }
    },
  });
  assert.equal(r.code, 130, r.stderr);
  assert.equal(await marks(f), 'after_run\nbefore_remove\n');
});

test('a hook that leaves a sleep behind is killed at its timeout, with nothing left running', async () => {
  const f = await fixture();
  const tag = String(600 + Math.floor(Math.random() * 300));
  const file = await writePipeline(f, withHooks(`  timeout: 2s\n  before_run: sleep ${tag}.5 & sleep ${tag}.5`));
  const t0 = Date.now();
  const r = await execPipeline(f, file);
  // killed, not waited out: the hook's sleep alone would have held the run for more than `tag` seconds
  assert.ok(Date.now() - t0 < Number(tag) * 1000, `the run took ${Date.now() - t0} ms: it waited for the hook's sleep of ${tag}.5 s`);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, /hook before_run timed out after 2\.0s \(its processes were killed\)/);
  await new Promise((res) => setTimeout(res, 300));
  const left = execFileSync('ps', ['-eo', 'args'], { encoding: 'utf8' }).split('\n').filter((l) => l.includes(`sleep ${tag}.5`));
  assert.deepEqual(left, [], 'no process of the hook survives it');
});

test('a hook printing more than the cap is cut without blocking', async () => {
  const f = await fixture();
  const file = await writePipeline(f, withHooks(`  after_run: head -c 20000000 /dev/zero | tr '\\\\0' x; echo; echo done`));
  const r = await execPipeline(f, file, [], { tailOnly: true });
  assert.equal(r.code, 0, r.stderr.slice(-500));
  const log = path.join(f.home, 'runs', r.json.runId, 'hooks.log');
  assert.ok((await stat(log)).size < 1024 * 1024, 'the log holds only the cap');
  assert.match(await readFile(log, 'utf8'), /\[runner: hook output cut at \d+ bytes\]/);
});

test('hooks of a task: after_create only when the task worktree is first made; RUNNER_TASK_ID and RUNNER_ATTEMPT set', async () => {
  const f = await fixture();
  const m = path.join(f.root, 'marks.txt');
  const file = await writePipeline(
    f,
    withHooks(`  after_create: echo "created $RUNNER_TASK_ID" >> ${m}\n  before_run: echo "run $RUNNER_TASK_ID $RUNNER_ATTEMPT" >> ${m}\n  before_remove: echo "removing" >> ${m}`),
  );
  for (let i = 0; i < 2; i++) assert.equal((await execPipeline(f, file, ['--task', 'tk'])).code, 0);
  assert.equal(await marks(f), 'created tk\nrun tk 1\nrun tk 2\n', 'before_remove does not run: the task worktree stays');
});

test('a hook that escapes its process group with setsid does not hold the runner', async () => {
  const f = await fixture();
  // a sleep of its own length (600 s and more), so its processes can be told apart from any other
  const tag = String(600 + Math.floor(Math.random() * 300));
  const file = await writePipeline(f, withHooks(`  timeout: 5s\n  before_run: setsid sleep ${tag}.25 &`));
  const t0 = Date.now();
  const r = await execPipeline(f, file);
  const took = Date.now() - t0;
  // the escaped sleep is not the runner's to wait for: had the runner waited for it, it would have taken `tag` seconds
  for (const line of execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n')) {
    const m = /^\s*(\d+) sleep (\d+)\.25$/.exec(line);
    if (m && m[2] === tag) process.kill(Number(m[1]));
  }
  assert.equal(r.code, 0, r.stderr);
  assert.ok(took < Number(tag) * 1000, `the runner exited after ${took} ms: it waited for the escaped sleep of ${tag}.25 s`);
});
