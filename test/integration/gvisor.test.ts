/**
 * isolation: gvisor, for real: steps run under the engine's runsc (the
 * engine has it registered as `runsc`), told apart from runc by what the
 * sandbox's kernel says of itself (uname -r 4.4.0, dmesg "Starting gVisor").
 * Each cap is reported as itself, the workspaces, lanes, hooks, caches,
 * egress, secrets and recovery work as under runc, and an engine without
 * gVisor (or a runtime that is not gVisor) is refused before anything starts.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, commitsOn, containersOfRun, execPipeline, git, IMAGE, otherWorktrees, pipelineYaml, projectsForThisFile, runCli, serveFolder, until, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** What a step writes to tell where it ran: the kernel release and whether the kernel's log says gVisor. */
const WHERE = (name: string) => `uname -r > ${name}.kernel; if dmesg 2>/dev/null | grep -q gVisor; then echo gvisor; else echo host; fi > ${name}.dmesg`;

/** The sandbox a step ran in, read from what it committed on the run branch. */
function ranIn(f: Fixture, branch: string, name: string): 'gvisor' | 'runc' {
  const kernel = git(f.project, 'show', `${branch}:${name}.kernel`);
  const dmesg = git(f.project, 'show', `${branch}:${name}.dmesg`);
  if (kernel === '4.4.0' && dmesg === 'gvisor') return 'gvisor';
  assert.notEqual(kernel, '4.4.0', `${name}: the kernel says 4.4.0 but dmesg says ${dmesg}`);
  assert.equal(dmesg, 'host', `${name}: dmesg says gVisor under kernel ${kernel}`);
  return 'runc';
}

async function record(f: Fixture, runId: string): Promise<any> {
  return JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
}

test('a step under gVisor runs there and its work is committed; a mixed file runs each step where it asks, and says so', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: sandboxed
    run: |
      ${WHERE('sandboxed')}
      echo done > work.txt
  - id: plain
    isolation: runc
    run: ${WHERE('plain')}
`).replace('defaults:\n', 'defaults:\n  isolation: gvisor\n'),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(ranIn(f, r.json.branch, 'sandboxed'), 'gvisor');
  assert.equal(ranIn(f, r.json.branch, 'plain'), 'runc');
  assert.equal(git(f.project, 'show', `${r.json.branch}:work.txt`), 'done');
  assert.match(r.stderr, /▶ step sandboxed \(1\/2\) in runner\/base:latest under gVisor/);
  assert.match(r.stderr, /▶ step plain \(2\/2\) in runner\/base:latest\n/);
  const rec = await record(f, r.json.runId);
  assert.deepEqual(rec.steps.map((s: any) => [s.id, s.isolation]), [['sandboxed', 'gvisor'], ['plain', 'runc']]);
  const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /sandboxed .* under gvisor/);
  assert.match(show.stdout, /plain .* under runc/);
  assert.deepEqual(containersOfRun(r.json.runId), []);
});

test('--isolation gvisor and RUNNER_ISOLATION=gvisor apply to the steps that do not say; a step that says runc keeps it', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(`  - id: unsaid\n    run: ${WHERE('unsaid')}\n  - id: said\n    isolation: runc\n    run: ${WHERE('said')}\n`));
  const flag = await execPipeline(f, file, ['--isolation', 'gvisor']);
  assert.equal(flag.code, 0, flag.stderr);
  assert.equal(ranIn(f, flag.json.branch, 'unsaid'), 'gvisor');
  assert.equal(ranIn(f, flag.json.branch, 'said'), 'runc');
  const env = await execPipeline(f, file, [], { env: { RUNNER_ISOLATION: 'gvisor' } });
  assert.equal(env.code, 0, env.stderr);
  assert.equal(ranIn(f, env.json.branch, 'unsaid'), 'gvisor');
  assert.equal(ranIn(f, env.json.branch, 'said'), 'runc');
  const neither = await execPipeline(f, file);
  assert.equal(ranIn(f, neither.json.branch, 'unsaid'), 'runc', 'without them: runc');
});

test('under gVisor each cap is reported as itself: memory (oom), processes (pids), file size, timeout', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: hog
    continue_on_error: true
    resources: { memory: 48m }
    run: dd if=/dev/zero of=/dev/null bs=256M count=1
  - id: forker
    continue_on_error: true
    resources: { pids: 16 }
    run: |
      refused=0
      for i in $(seq 1 40); do (sleep 20 &) 2>/dev/null || refused=$((refused + 1)); done
      echo "refused=$refused" > forks.txt
      sleep 2
  - id: writer
    continue_on_error: true
    resources: { file_size: 1m }
    run: dd if=/dev/zero of=big.bin bs=1M count=4
  - id: slow
    continue_on_error: true
    timeout: 2s
    run: |
      trap '' TERM
      sleep 300
`).replace('defaults:\n', 'defaults:\n  isolation: gvisor\n'),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const rec = await record(f, r.json.runId);
  const by = Object.fromEntries(rec.steps.map((s: any) => [s.id, s]));
  for (const s of rec.steps) assert.equal(s.isolation, 'gvisor', s.id);
  assert.equal(by.hog.status, 'oom');
  assert.deepEqual(by.hog.limits, ['memory']);
  const refused = Number(/refused=(\d+)/.exec(git(f.project, 'show', `${r.json.branch}:forks.txt`))?.[1]);
  assert.ok(refused >= 20, `forks past 16 processes were refused (${refused} of 40)`);
  assert.deepEqual(by.forker.limits, ['pids']);
  assert.equal(by.writer.status, 'failed');
  assert.deepEqual(by.writer.limits, ['file_size']);
  assert.equal((await stat(path.join(f.home, 'worktrees', r.json.runId, 'big.bin')).catch(() => undefined))?.size ?? 1024 * 1024, 1024 * 1024);
  assert.equal(by.slow.status, 'timed_out');
  assert.deepEqual(by.slow.limits, ['timeout']);
  const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(show.stdout, /forker .*limits: pids/);
  assert.deepEqual(containersOfRun(r.json.runId), []);
});
