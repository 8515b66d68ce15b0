/**
 * Warm step containers (src/run/warm/), with the real engine: under `--warm`, a step behind a gateway whose
 * shape the pool learned claims a container made and started ahead beside its gateway. These tests play the
 * pool's attacks against it: it is fresh (nothing an earlier step left, no process, no file outside the
 * workspace), nothing of the step is in the engine's config (`docker inspect`: no variable, secret, command or
 * run label), its work is committed as any step's, a runner killed with -9 while it runs has it stopped before
 * recovery commits what it left, and nothing of the pool is left after.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, commitsOn, git, projectsForThisFile, runCli, serveFolder, until, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const SECRET = 'warm-secret-value-0123456789abcdef';

const pipeline = (steps: string, name = 'warm-steps', project = 'project') => `version: 1
name: ${name}
project: { path: ${project} }
secrets: [WARM_TOKEN]
steps:
${steps}`;

const step = (id: string, run: string) => `  - id: ${id}
    image: runner/toolchain:latest
    egress: [allowed.example]
    secrets: [WARM_TOKEN]
    env: { MY_VAR: "value of ${id}" }
    timeout: 2m
    run: |
${run
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
`;

/** Containers and networks a warm pool of this home made, by their labels. */
function warmLeft(f: Fixture): { containers: string[]; networks: string[] } {
  const labels = ['--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.warm-owner'];
  const lines = (args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean);
  return { containers: lines(['ps', '-a', ...labels, '--format', '{{.Names}}']), networks: lines(['network', 'ls', ...labels, '--format', '{{.Name}}']) };
}

/** The running step containers of a warm pool of this home (claimed or waiting), by id. */
function warmStepContainers(f: Fixture): string[] {
  return execFileSync('docker', ['ps', '-q', '--no-trunc', '--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.role=step'], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

function logOf(f: Fixture, runId: string, id: string): Promise<string> {
  return readFile(path.join(f.home, 'runs', runId, 'steps', `${id}.log`), 'utf8');
}

/** `runner exec --warm N` in the background, its output kept, its run id read from it. */
function startExec(f: Fixture, file: string, warm: number) {
  const child = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home, '--warm', String(warm)], { env: { ...process.env, CI: 'true', WARM_TOKEN: SECRET }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const done = new Promise<number | null>((r) => child.on('close', (code) => r(code)));
  return { child, done, out: () => out, runId: () => /run (\d{8}-\d{6}-[a-z0-9]{6})/.exec(out)?.[1] };
}

test('runner exec --warm 2: a later step claims a warm container; it is fresh, its variables and secret reach it and none is in the engine\'s config; the work is committed and nothing of the pool is left', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(
      step(
        'one',
        // a hostile first step: a process left behind, files outside the workspace
        ['(sleep 300 &)', 'echo planted > /tmp/planted; echo planted > "$HOME/planted"; echo planted > /dev/shm/planted', 'echo one > one.txt'].join('\n'),
      ) +
        step(
          'two',
          [
            'for p in /tmp/planted "$HOME/planted" /dev/shm/planted; do test -e "$p" && echo "LEFT $p"; done',
            'ps -eo comm | grep -qx sleep && echo "LEFT a sleep"',
            'echo "var=$MY_VAR secret-length=${#WARM_TOKEN} one=$(cat one.txt) pwd=$(pwd)"',
            'echo two > two.txt',
            'echo waiting-for-inspect; sleep 6',
          ].join('\n'),
        ) +
        step('three', 'cat two.txt > three.txt'),
    ),
  );
  const run = startExec(f, file, 2);
  // while step two runs: its container, as the engine shows it
  const id = await until('step two to run in a warm container', async () => (/\[two\] waiting-for-inspect/.test(run.out()) ? warmStepContainers(f).find(Boolean) : undefined), 120_000);
  const inspect = JSON.parse(execFileSync('docker', ['inspect', id], { encoding: 'utf8' }))[0] as { Config: { Env: string[]; Cmd: string[] | null; Entrypoint: string[]; Labels: Record<string, string> } };
  const config = JSON.stringify(inspect.Config);
  assert.ok(!config.includes(SECRET), 'the secret is not in its config');
  assert.ok(!config.includes('value of two'), 'nor the step\'s variables');
  assert.ok(!config.includes('echo two'), 'nor its command');
  assert.equal(inspect.Config.Labels['dev.runner.run-id'], undefined, 'nor its run');
  assert.equal(await run.done, 0, run.out());
  const runId = run.runId()!;
  const two = await logOf(f, runId, 'two');
  assert.match(two, /runner: container: a warm one, made ahead beside its gateway and given to this step alone/, two);
  assert.doesNotMatch(two, /LEFT/, 'nothing the first step left outside its workspace reached it');
  assert.match(two, /var=value of two secret-length=34 one=one pwd=\/home\/agent\/run-workspace/);
  assert.doesNotMatch(two, new RegExp(SECRET), 'the secret is masked in its log as ever');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8')) as { baseSha: string; steps: Array<{ id: string; status: string }> };
  assert.deepEqual(rec.steps.map((s) => [s.id, s.status]), [['one', 'completed'], ['two', 'completed'], ['three', 'completed']]);
  assert.equal(git(f.project, 'show', `run/${runId}:three.txt`), 'two', 'each step saw the one before\'s work, committed');
  assert.equal(commitsOn(f.project, `run/${runId}`, rec.baseSha).length, 3);
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.deepEqual(await readdir(path.join(f.home, 'warm-steps')), [], 'no warm container\'s directory is left');
});

test('a runner killed with -9 while a step runs in a warm container: the next command stops it before recovery commits what it left, and removes the worktree', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(step('first', 'echo one > one.txt') + step('long', ['echo partial > partial.txt', 'echo long-step-running', '(while true; do date >> late.txt; sleep 0.2; done) &', 'sleep 300'].join('\n'))),
  );
  const run = startExec(f, file, 1);
  await until('the long step to run', async () => (/\[long\] long-step-running/.test(run.out()) ? true : undefined), 120_000);
  const runId = run.runId()!;
  assert.match(await logOf(f, runId, 'long').catch(() => ''), /container: a warm one/, 'the long step runs in a warm container');
  run.child.kill('SIGKILL');
  await run.done;
  assert.ok(warmStepContainers(f).length >= 1, 'the killed runner left it running');
  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stderr, new RegExp(`run ${runId} was interrupted`));
  assert.deepEqual(warmStepContainers(f), [], 'stopped');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8')) as { baseSha: string; steps: Array<{ id: string; status: string }> };
  assert.deepEqual(rec.steps.map((s) => [s.id, s.status]), [['first', 'completed'], ['long', 'interrupted']]);
  const [last] = commitsOn(f.project, `run/${runId}`, rec.baseSha);
  assert.equal(last!.subject, "step/long (runner): interrupted", `recovery trusted the worktree the warm container had taken\n${ls.stderr}\n${JSON.stringify(rec)}`);
  assert.equal(git(f.project, 'show', `run/${runId}:partial.txt`), 'partial');
  assert.equal(existsSync(path.join(f.home, 'worktrees', runId)), false, 'no worktree left');
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});

test('runner serve --warm 1: the second run\'s step claims a warm container made to the first\'s shape, and the dashboard\'s record of it is a step as any', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const s = await serveFolder(f, { 'warm.yaml': pipeline(step('served', 'echo "served $MY_VAR" > served.txt; cat served.txt'), 'served', f.project) }, '127.0.0.1:0', { args: ['--warm', '1'], env: { WARM_TOKEN: SECRET } });
  try {
    const trigger = async () => {
      const res = await fetch(`${s.base}/api/pipelines/served/runs`, { method: 'POST' });
      assert.equal(res.status, 202);
      const { runId } = (await res.json()) as { runId: string };
      const status = await until('the run to end', async () => {
        const r = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string };
        return ['queued', 'starting', 'running'].includes(r.status) ? undefined : r.status;
      }, 120_000);
      return { runId, status };
    };
    const first = await trigger();
    assert.equal(first.status, 'succeeded');
    assert.doesNotMatch(await logOf(f, first.runId, 'served'), /container: a warm one/, 'the first of its shape starts cold');
    // the pool makes the next gateway's container to the shape it learned, and every door says so
    await until('a warm step container', async () => (warmStepContainers(f).length === 1 ? true : undefined), 60_000);
    assert.deepEqual(await (await fetch(`${s.base}/api/warm`)).json(), { gateways: 1, containers: 1, size: 1 });
    assert.match(await (await fetch(`${s.base}/metrics`)).text(), /^runner_warm_step_containers 1$/m);
    await until('runner runs ls to say it', async () => (/1 ready, 1 with the step's container made too\)$/m.test((await runCli(['runs', 'ls', '--home', f.home])).stdout) ? true : undefined), 30_000);
    const second = await trigger();
    assert.equal(second.status, 'succeeded');
    const log = await logOf(f, second.runId, 'served');
    assert.match(log, /container: a warm one/, log);
    assert.match(log, /served value of served/);
    assert.equal(git(f.project, 'show', `run/${second.runId}:served.txt`), 'served value of served');
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});

test('a step that reads a cache through a throw-away layer claims a warm container too: what it writes there is thrown away, what the cache holds it reads, and no volume is left', { timeout: 240_000 }, async () => {
  const f = await fixture();
  const cached = (id: string, run: string) => step(id, run).replace('    timeout: 2m\n', '    timeout: 2m\n    cache: { npm: ro }\n');
  const file = await writePipeline(
    f,
    pipeline(
      // the first teaches the pool the shape; the second, in a warm container, writes to the cache it only reads
      cached('one', 'echo one > one.txt') +
        cached('two', ['echo planted > "$npm_config_cache/planted"', 'cat "$npm_config_cache/planted"'].join('\n')) +
        cached('three', 'test ! -e "$npm_config_cache/planted" && echo "not planted" > three.txt'),
    ),
  );
  const volumesBefore = volumesOf(f);
  const run = startExec(f, file, 2);
  assert.equal(await run.done, 0, run.out());
  const runId = run.runId()!;
  const two = await logOf(f, runId, 'two');
  assert.match(two, /runner: container: a warm one/, two);
  assert.match(two, /^\[?planted/m, 'it wrote through the layer');
  assert.equal(git(f.project, 'show', `run/${runId}:three.txt`), 'not planted', 'what it wrote to the cache was thrown away');
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
  assert.deepEqual(volumesOf(f).filter((v) => !volumesBefore.includes(v)), [], 'no overlay volume of a warm container is left');
});

/** Docker volumes whose options name this fixture's home (an overlay mount is an anonymous volume with the layer's paths in its options). */
function volumesOf(f: Fixture): string[] {
  const ids = execFileSync('docker', ['volume', 'ls', '-q'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  if (!ids.length) return [];
  const lines = execFileSync('docker', ['volume', 'inspect', '-f', '{{.Name}} {{index .Options "o"}}', ...ids], { encoding: 'utf8' }).split('\n');
  return lines.filter((l) => l.includes(f.home)).map((l) => l.split(' ')[0]!);
}

test('runner serve --warm 2 of two pipelines on two projects: each keeps a warm container of its own shape, and each pipeline\'s next run claims its own', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const other = path.join(f.root, 'other-project');
  await mkdir(other);
  execFileSync('git', ['init', '-q', '-b', 'main', other]);
  await writeFile(path.join(other, 'README.md'), 'the other project\n');
  execFileSync('git', ['-C', other, 'add', '.']);
  execFileSync('git', ['-C', other, '-c', 'user.email=t@t', '-c', 'user.name=t', 'commit', '-qm', 'init']);
  const s = await serveFolder(
    f,
    { 'a.yaml': pipeline(step('a', 'echo a > a.txt'), 'pipe-a', f.project), 'b.yaml': pipeline(step('b', 'echo b > b.txt'), 'pipe-b', other) },
    '127.0.0.1:0',
    { args: ['--warm', '2'], env: { WARM_TOKEN: SECRET } },
  );
  try {
    const trigger = async (name: string) => {
      const res = await fetch(`${s.base}/api/pipelines/${name}/runs`, { method: 'POST' });
      assert.equal(res.status, 202);
      const { runId } = (await res.json()) as { runId: string };
      const status = await until('the run to end', async () => {
        const r = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string };
        return ['queued', 'starting', 'running'].includes(r.status) ? undefined : r.status;
      }, 120_000);
      assert.equal(status, 'succeeded');
      return runId;
    };
    const warmed = async (runId: string, id: string) => /container: a warm one/.test(await logOf(f, runId, id));
    await trigger('pipe-a');
    await trigger('pipe-b');
    // the refill behind each run makes the shape fewest waiting gateways have: one of each
    await until('a warm container of each pipeline', async () => (warmStepContainers(f).length === 2 ? true : undefined), 60_000);
    for (const [name, id] of [['pipe-a', 'a'], ['pipe-b', 'b'], ['pipe-a', 'a']] as const) {
      const runId = await trigger(name);
      assert.ok(await warmed(runId, id), `${name}'s run claimed a warm container:\n${await logOf(f, runId, id)}`);
      await until('the pool whole again', async () => (warmStepContainers(f).length === 2 ? true : undefined), 60_000);
    }
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  assert.deepEqual(warmLeft(f), { containers: [], networks: [] });
});
