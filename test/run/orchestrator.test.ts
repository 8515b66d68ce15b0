/**
 * executeRun end to end on a fake engine (test/fixtures/fake-engine.ts): real
 * git, a real project and runner home; only the containers are scripted. What
 * only a real engine can show (limits the kernel enforces, images, gVisor) is
 * in test/integration.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { chown, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CanceledError, ContainerError, RunnerError } from '../../src/common/errors.js';
import { defaultSettings } from '../../src/settings/run-settings.js';
import { LABELS } from '../../src/container/runtime.js';
import { assertLeftNothing, coreProjects, FakeEngine, onBranch, pipeline, runCommits, runOn } from '../fixtures/core-run.js';
import { git, otherWorktrees } from '../fixtures/project.js';

const project = coreProjects();

test("a run's steps are committed one per step on run/<id>, the workspace goes, and no container is left", async () => {
  const f = await project({ remote: true });
  const file = await pipeline(
    f,
    `  - id: design
    run: design
  - id: build
    run: build
  - id: check
    run: check`,
  );
  const engine = new FakeEngine()
    .step('design', async (p) => {
      await p.write('DESIGN.md', 'a design\n');
      p.stdout('designed\n');
    })
    .step('build', async (p) => {
      await p.write('src/app.txt', `built from: ${await p.read('DESIGN.md')}`);
    })
    .step('check', async (p) => {
      await p.write('CHECKED', 'yes\n');
      p.stderr('all good\n');
    });
  const { record, reporter } = await runOn(engine, f, file);

  assert.equal(record.status, 'succeeded');
  assert.equal(record.branch, `run/${record.runId}`);
  assert.deepEqual(record.steps.map((s) => [s.id, s.status]), [['design', 'completed'], ['build', 'completed'], ['check', 'completed']]);
  const commits = runCommits(f, record);
  assert.deepEqual(commits.map((c) => c.subject), ['step/design (runner/base:latest): completed', 'step/build (runner/base:latest): completed', 'step/check (runner/base:latest): completed']);
  assert.deepEqual(commits.map((c) => c.files), [['DESIGN.md'], ['src/app.txt'], ['CHECKED']]);
  assert.deepEqual(record.steps.map((s) => s.commit), commits.map((c) => c.sha));
  assert.match(commits[0]!.body, new RegExp(`Runner-Run: ${record.runId}\nRunner-Step: design\nRunner-Status: completed`));
  assert.equal(onBranch(f, record, 'src/app.txt'), 'built from: a design');
  assert.equal(record.headSha, commits[2]!.sha);
  // its output reached the log and the reporter
  assert.deepEqual(reporter.linesOf('design'), ['designed']);
  assert.match(await readFile(path.join(f.home, 'runs', record.runId, 'steps', 'check.log'), 'utf8'), /all good/);
  // the project's checkout is untouched; the run's worktree is gone
  assert.equal(git(f.project, 'status', '--porcelain'), '');
  assert.equal(existsSync(path.join(f.project, 'DESIGN.md')), false);
  assert.deepEqual(otherWorktrees(f), []);
  assert.deepEqual(assertLeftNothing(engine, record), []);
  // one container per step, each made, started, exited and removed in that order
  for (const step of ['design', 'build', 'check']) {
    const ops = engine.journal.filter((e) => e.step === step).map((e) => e.op);
    assert.deepEqual(ops, ['create', 'start', 'begin', 'exit', 'remove'], step);
  }
  // steps ran one after another: each began after the one before was removed
  const seq = (op: 'begin' | 'remove', step: string) => engine.entries(op, step)[0]!.seq;
  assert.ok(seq('remove', 'design') < seq('begin', 'build') && seq('remove', 'build') < seq('begin', 'check'));
  // pushed to the project's remote
  assert.equal(record.pushed, true);
  assert.equal(git(f.remote, 'rev-parse', record.branch!), record.headSha);
});

test('a step\'s container is made as the file says: its mounts, user, limits, labels, command and environment', async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: only
    run: echo hi
    resources: { memory: 64m, cpus: 0.5, pids: 32 }
    env: { GREETING: hello }`,
  );
  let seen: Record<string, string> = {};
  const engine = new FakeEngine().step('only', (p) => void (seen = p.env));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  const spec = engine.containers[0]!.spec;
  assert.deepEqual(spec.cmd, ['sh', '-e', '-c', 'echo hi']);
  assert.equal(spec.image, 'runner/base:latest');
  assert.equal(spec.workingDir, '/home/agent/run-workspace');
  assert.equal(spec.memoryBytes, 64 * 1024 ** 2);
  assert.equal(spec.cpus, 0.5);
  assert.equal(spec.pids, 32);
  assert.equal(spec.network, 'none');
  assert.deepEqual(spec.capAdd, []);
  assert.equal(spec.labels[LABELS.runId], record.runId);
  assert.equal(spec.labels[LABELS.stepId], 'only');
  assert.equal(spec.labels[LABELS.home], f.home);
  // the project belongs to root here: the step runs as 65532; else as the project's owner
  const owner = process.getuid?.() === 0 ? '65532:65532' : `${process.getuid?.()}:${process.getgid?.()}`;
  assert.equal(spec.user, owner);
  const ws = spec.mounts.find((m) => m.target === '/home/agent/run-workspace')!;
  assert.equal(ws.source, record.worktree);
  assert.equal(ws.readOnly, false);
  assert.ok(spec.mounts.some((m) => m.target === '/home/agent/.runner' && !m.readOnly));
  assert.ok(spec.mounts.some((m) => m.target === '/home/agent/project-workspace' && m.readOnly));
  assert.equal(seen.GREETING, 'hello');
  assert.equal(seen.RUNNER_RUN_ID, record.runId);
  assert.equal(seen.RUNNER_STEP_ID, 'only');
  assert.equal(seen.RUNNER_BRANCH, record.branch);
  assert.equal(seen.RUNNER_ATTEMPT, '1');
  assert.equal(seen.RUNNER_BASE_SHA, record.baseSha);
  // nothing of the runner's own environment reaches a step
  assert.equal(seen.PATH, undefined);
});

test('a failing step stops the run: its work is committed, the steps after it skipped', async () => {
  const f = await project({ remote: true });
  const file = await pipeline(
    f,
    `  - id: first
    run: first
  - id: second
    run: second`,
  );
  const engine = new FakeEngine()
    .step('first', async (p) => {
      await p.write('half.txt', 'half done\n');
      return 3;
    })
    .step('second', () => assert.fail('second must not run'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'failed');
  assert.deepEqual(record.steps.map((s) => [s.id, s.status, s.exitCode]), [['first', 'failed', 3], ['second', 'skipped', null]]);
  const [c] = runCommits(f, record);
  assert.equal(c!.subject, 'step/first (runner/base:latest): failed (exit 3)');
  assert.match(c!.body, /Runner-Status: failed \(exit 3\)/);
  assert.equal(engine.entries('create', 'second').length, 0);
  // a failed run's branch is pushed too, with the failed step's work on it
  assert.equal(record.pushed, true);
  assert.equal(git(f.remote, 'rev-parse', record.branch!), c!.sha);
  assert.deepEqual(assertLeftNothing(engine, record), []);
});

test('continue_on_error: the run goes on after a failed step and can succeed', async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: lint
    run: lint
    continue_on_error: true
  - id: build
    run: build`,
  );
  const engine = new FakeEngine().step('lint', () => 1).step('build', (p) => p.write('out.txt', 'built\n'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.deepEqual(record.steps.map((s) => [s.id, s.status]), [['lint', 'failed'], ['build', 'completed']]);
  assert.equal(onBranch(f, record, 'out.txt'), 'built');
});

test('outputs pass to later steps: env, run scripts and the commit subject from summary', async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: plan
    run: plan
    outputs: [target, notes]
  - id: act
    run: 'echo "\${{ steps.plan.outputs.target }}"'
    env: { TARGET: "\${{ steps.plan.outputs.target }}", NOTES: "\${{ steps.plan.outputs.notes }}" }`,
  );
  let env: Record<string, string> = {};
  const engine = new FakeEngine()
    .step('plan', async (p) => {
      await p.write('PLAN.md', 'plan\n');
      await p.output({ target: 'lib/x.ts', notes: 'line one\nline two', summary: 'Planned the change', ignored: 'not declared' });
    })
    .step('act', async (p) => {
      env = p.env;
      await p.write('done.txt', `${p.env.TARGET}\n`);
    });
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.deepEqual(record.steps[0]!.outputs, { target: 'lib/x.ts', notes: 'line one\nline two', summary: 'Planned the change' });
  assert.equal(env.TARGET, 'lib/x.ts');
  assert.equal(env.NOTES, 'line one\nline two');
  // in a run: script the value travels as a variable, never as shell code
  const act = engine.containers.find((c) => c.step === 'act')!.spec;
  assert.deepEqual(act.cmd, ['sh', '-e', '-c', 'echo "${RUNNER_EXPR_0}"']);
  assert.equal(env.RUNNER_EXPR_0, 'lib/x.ts');
  assert.deepEqual(runCommits(f, record).map((c) => c.subject), ['step/plan (runner/base:latest): Planned the change', 'step/act (runner/base:latest): completed']);
  // the io directory (where the raw outputs were) is gone
  assert.deepEqual(await readdir(path.join(f.home, 'runs', record.runId, 'steps')).then((l) => l.filter((n) => !/\.(log|patch)$/.test(n))), []);
});

test("a step's secrets reach its process, never its container's config, and are masked in its log and record", async () => {
  const f = await project();
  const file = await pipeline(
    f,
    `  - id: deploy
    run: deploy
    secrets: [DEPLOY_TOKEN]
    outputs: [said]`,
    'secrets: [DEPLOY_TOKEN]',
  );
  const token = 'tok-3f9a2b7c1d5e';
  const engine = new FakeEngine().step('deploy', async (p) => {
    p.stdout(`using ${p.env.DEPLOY_TOKEN}\n`);
    await p.output({ said: `token ${p.env.DEPLOY_TOKEN}`, summary: `deployed with ${p.env.DEPLOY_TOKEN}` });
    await p.write('deployed', 'yes\n');
  });
  const { record, reporter } = await runOn(engine, f, file, { secrets: { DEPLOY_TOKEN: token } });
  assert.equal(record.status, 'succeeded');
  const spec = engine.containers[0]!.spec;
  assert.equal(spec.secretEnv?.DEPLOY_TOKEN, token);
  assert.equal(JSON.stringify({ ...spec, secretEnv: undefined }).includes(token), false);
  assert.deepEqual(reporter.linesOf('deploy'), ['using ***']);
  assert.equal(record.steps[0]!.outputs.said, 'token ***');
  const runDir = path.join(f.home, 'runs', record.runId);
  for (const name of ['run.json', 'events.jsonl', 'steps/deploy.log']) assert.equal((await readFile(path.join(runDir, name), 'utf8')).includes(token), false, name);
  assert.equal(runCommits(f, record)[0]!.subject, 'step/deploy (runner/base:latest): deployed with ***');
});

test('a missing secret is said the way the door reads secrets: a door that never reads the environment names its file, not export', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: deploy\n    run: deploy\n    secrets: [DEPLOY_TOKEN]', 'secrets: [DEPLOY_TOKEN]');
  const engine = new FakeEngine();
  await assert.rejects(runOn(engine, f, file), (e: unknown) => e instanceof RunnerError && e.code === 'secret_missing' && /export DEPLOY_TOKEN=\.\.\..*--secrets-file/.test(e.message));
  const fileOnly = { ...defaultSettings(), secretsFile: '/etc/runner/mcp.env', secretsFromEnvironment: false };
  await assert.rejects(runOn(engine, f, file, { settings: fileOnly }), (e: unknown) => {
    assert.ok(e instanceof RunnerError && e.code === 'secret_missing');
    assert.match(e.message, /add it to \/etc\/runner\/mcp\.env \(a line DEPLOY_TOKEN=\.\.\.\): this runner reads secrets from its --secrets-file alone, never from the environment/);
    assert.doesNotMatch(e.message, /export/);
    return true;
  });
  const noFile = { ...defaultSettings(), secretsFromEnvironment: false };
  await assert.rejects(runOn(engine, f, file, { settings: noFile }), (e: unknown) => e instanceof RunnerError && /start it again with --secrets-file F/.test(e.message) && !/export/.test(e.message));
  assert.equal(engine.containers.length, 0);
});

test('an engine that does not answer, a missing image or a missing gVisor refuse the run before anything exists', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: a\n    run: a');
  await assert.rejects(runOn(new FakeEngine({ down: true }), f, file), (e: unknown) => e instanceof ContainerError && e.code === 'docker_unreachable');
  const other = await pipeline(f, '  - id: a\n    run: a\n    image: example.org/none:1', '', 'other.yaml');
  const noImage = new FakeEngine();
  await assert.rejects(runOn(noImage, f, other), (e: unknown) => e instanceof ContainerError && e.code === 'image_missing');
  const sandboxed = await pipeline(f, '  - id: a\n    run: a\n    isolation: gvisor', '', 'gvisor.yaml');
  const noGvisor = new FakeEngine();
  await assert.rejects(runOn(noGvisor, f, sandboxed), (e: unknown) => e instanceof ContainerError && e.code === 'no_gvisor');
  // no run was recorded, no branch made, no container created
  assert.deepEqual(existsSync(path.join(f.home, 'runs')) ? await readdir(path.join(f.home, 'runs')) : [], []);
  assert.equal(git(f.project, 'branch', '--list', 'run/*'), '');
  assert.equal(noImage.containers.length + noGvisor.containers.length, 0);
});

test('an image the engine lacks is pulled before the run starts', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: a\n    run: a\n    image: example.org/tool:1');
  const engine = new FakeEngine({ pullable: ['example.org/tool:1'] }).step('a', (p) => p.write('a.txt', 'a\n'));
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.equal(engine.entries('pull').length, 1);
  assert.ok(engine.entries('pull')[0]!.seq < engine.entries('create')[0]!.seq);
});

test('a cancel before the run starts leaves nothing', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: a\n    run: a');
  const engine = new FakeEngine();
  await assert.rejects(
    runOn(engine, f, file, { controls: (c) => c.cancel.abort() }),
    (e: unknown) => e instanceof CanceledError,
  );
  assert.equal(engine.containers.length, 0);
  assert.equal(git(f.project, 'branch', '--list', 'run/*'), '');
});

test('hooks: a failing before_run fails the run before any step, its workspace kept; after_run runs even after a cancel', async () => {
  const f = await project();
  const failing = await pipeline(f, '  - id: a\n    run: a', 'hooks:\n  before_run: "echo nope >&2; exit 4"', 'failing.yaml');
  const engine = new FakeEngine();
  const { record } = await runOn(engine, f, failing);
  assert.equal(record.status, 'failed');
  assert.equal(record.error?.code, 'hook_failed');
  assert.equal(engine.containers.length, 0);
  assert.equal(existsSync(record.worktree!), true);
  assert.equal(record.keptWorkspace, true);

  const marker = path.join(f.root, 'after-run-ran');
  let cancelIt = () => {};
  const canceled = await pipeline(f, '  - id: a\n    run: a', `hooks:\n  after_run: "echo \\"$RUNNER_RUN_ID\\" > ${marker}"`, 'canceled.yaml');
  const { record: rec2 } = await runOn(new FakeEngine().step('a', async (p) => {
    await p.write('a.txt', 'a\n');
    cancelIt();
    await p.untilStopped();
  }), f, canceled, { controls: (c) => (cancelIt = () => c.cancel.abort()) });
  assert.equal(rec2.status, 'canceled');
  assert.equal((await readFile(marker, 'utf8')).trim(), rec2.runId);
});

test('a task worktree is made on the first run and reused by the next, kept after each, its runs counted', async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: work\n    run: work');
  const seen: string[] = [];
  const engine = new FakeEngine().step('work', async (p) => {
    seen.push(`${p.env.RUNNER_TASK_ID}#${p.env.RUNNER_TASK_RUN}`);
    const before = (await p.read('log.txt')) ?? '';
    await p.write('log.txt', `${before}run ${p.env.RUNNER_TASK_RUN}\n`);
  });
  const first = (await runOn(engine, f, file, { task: { id: 'T-7', title: 'Add login' } })).record;
  const second = (await runOn(engine, f, file, { task: { id: 'T-7' } })).record;
  assert.deepEqual(seen, ['T-7#1', 'T-7#2']);
  assert.equal(first.workspace, 'task_worktree');
  assert.equal(first.worktree, second.worktree);
  assert.equal(first.branch, second.branch);
  assert.match(first.branch!, /^feat\/T-7-add-login$/);
  assert.equal(existsSync(second.worktree!), true);
  assert.equal(git(f.project, 'show', `${second.branch}:log.txt`), 'run 1\nrun 2');
  assert.deepEqual(engine.live(), []);
});

test('a persistent directory: each step works in the directory itself, its changes listed, nothing committed', async () => {
  const f = await project();
  const dir = path.join(f.root, 'plain');
  await mkdir(dir);
  await writeFile(path.join(dir, 'keep.txt'), 'kept\n');
  await writeFile(path.join(dir, 'gone.txt'), 'bye\n');
  // a step never runs as root: the directory belongs to the user it runs as
  if (process.getuid?.() === 0) await chown(dir, 1000, 1000);
  const file = path.join(f.root, 'persistent.yaml');
  await writeFile(file, `version: 1
name: persistent
project:
  path: plain
  workspace: persistent_directory
defaults:
  image: runner/base:latest
steps:
  - id: tidy
    run: tidy
`);
  let user = '';
  const engine = new FakeEngine().step('tidy', async (p) => {
    user = p.spec.user;
    await p.write('new.txt', 'new\n');
    await rm(p.hostPath('/home/agent/run-workspace/gone.txt'));
  });
  const { record } = await runOn(engine, f, file);
  assert.equal(record.status, 'succeeded');
  assert.equal(record.workspace, 'persistent_directory');
  if (process.getuid?.() === 0) assert.equal(user, '1000:1000');
  const changes = record.steps[0]!.changes!;
  assert.deepEqual(changes.added.map((c) => c.path), ['new.txt']);
  assert.deepEqual(changes.deleted.map((c) => c.path), ['gone.txt']);
  assert.equal(record.steps[0]!.commit, null);
  assert.equal(await readFile(path.join(dir, 'new.txt'), 'utf8'), 'new\n');
  assert.equal(await readFile(path.join(dir, 'keep.txt'), 'utf8'), 'kept\n');
  // nothing is mounted at the project's checkout
  assert.equal(engine.containers[0]!.spec.mounts.some((m) => m.target === '/home/agent/project-workspace'), false);
});

test("a project's cache is mounted into the steps that name it and keeps what one run left for the next", async () => {
  const f = await project();
  const file = await pipeline(f, '  - id: install\n    run: install\n    cache: [npm]');
  const found: Array<string | undefined> = [];
  const engine = new FakeEngine().step('install', async (p) => {
    const dir = p.env.npm_config_cache!;
    found.push(await p.read(`${dir}/index.json`));
    await p.write(`${dir}/index.json`, `{"by":"${p.env.RUNNER_RUN_ID}"}`);
  });
  const first = (await runOn(engine, f, file)).record;
  const second = (await runOn(engine, f, file)).record;
  assert.equal(engine.containers[0]!.spec.env.npm_config_cache, '/var/cache/runner/npm');
  const mount = engine.containers[0]!.spec.mounts.find((m) => m.target === '/var/cache/runner/npm')!;
  assert.ok(mount.source.startsWith(path.join(f.home, 'caches')), mount.source);
  assert.equal(mount.readOnly, false);
  assert.deepEqual(found, [undefined, `{"by":"${first.runId}"}`]);
  assert.equal(second.status, 'succeeded');
  // nothing the step wrote in its cache is committed
  assert.deepEqual(runCommits(f, second), []);
});
