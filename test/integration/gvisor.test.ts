/**
 * isolation: gvisor, for real: steps run under the engine's runsc (the
 * engine has it registered as `runsc`), told apart from runc by what the
 * sandbox's kernel says of itself (uname -r 4.4.0, dmesg "Starting gVisor").
 * Each cap is reported as itself, the workspaces, lanes, hooks, caches,
 * egress, secrets and recovery work as under runc, and an engine without
 * gVisor (or a runtime that is not gVisor) is refused before anything starts.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { startFakeInternet } from '../fixtures/fake-internet.js';
import { containersOfRun, execPipeline, git, IMAGE, otherWorktrees, pipelineYaml, projectsForThisFile, runCli, serveFolder, startRun, until, writePipeline, type Fixture } from '../fixtures/project.js';

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
      # at its cap for 10 s: the runner asks runsc how many tasks the sandbox holds at most once a second, and on a
      # loaded machine (a clean-clone CI run beside other work) 2 s at the cap once passed without an answer
      sleep 10
  - id: forker_runc
    isolation: runc
    continue_on_error: true
    resources: { pids: 16 }
    run: |
      for i in $(seq 1 40); do (sleep 20 &) 2>/dev/null || true; done
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
  for (const s of rec.steps) assert.equal(s.isolation, s.id === 'forker_runc' ? 'runc' : 'gvisor', s.id);
  assert.equal(by.hog.status, 'oom');
  assert.deepEqual(by.hog.limits, ['memory']);
  const refused = Number(/refused=(\d+)/.exec(git(f.project, 'show', `${r.json.branch}:forks.txt`))?.[1]);
  assert.ok(refused >= 20, `forks past 16 processes were refused (${refused} of 40)`);
  assert.deepEqual(by.forker.limits, ['pids']);
  assert.match(r.stderr, /forker completed .*pids limit reached: the sandbox held 16 processes, its cap, where forks are refused/);
  assert.deepEqual(by.forker_runc.limits, ['pids'], 'under runc the cgroup still says it');
  assert.equal(by.writer.status, 'failed');
  assert.deepEqual(by.writer.limits, ['file_size']);
  assert.equal((await stat(path.join(f.home, 'worktrees', r.json.runId, 'big.bin')).catch(() => undefined))?.size ?? 1024 * 1024, 1024 * 1024);
  assert.equal(by.slow.status, 'timed_out');
  assert.deepEqual(by.slow.limits, ['timeout']);
  const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(show.stdout, /forker .*limits: pids/);
  assert.deepEqual(containersOfRun(r.json.runId), []);
});

test('a persistent_directory under gVisor: what the step writes is owned on the host by the directory\'s owner', async () => {
  const f = await fixture();
  const dir = path.join(f.root, 'content');
  await mkdir(dir);
  await writeFile(path.join(dir, 'keep.txt'), 'old\n');
  execFileSync('chown', ['-R', '1000:1000', dir]);
  const file = await writePipeline(
    f,
    `version: 1
name: digest
project: { path: ${dir}, workspace: persistent_directory }
defaults: { image: ${IMAGE}, timeout: 1m, isolation: gvisor }
steps:
  - id: write
    run: |
      uname -r > kernel.txt
      mkdir -p sub && echo new > sub/new.txt
      echo more >> keep.txt
`,
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(await readFile(path.join(dir, 'kernel.txt'), 'utf8'), '4.4.0\n');
  for (const p of ['kernel.txt', 'sub', 'sub/new.txt', 'keep.txt']) {
    const s = await stat(path.join(dir, p));
    assert.deepEqual([p, s.uid, s.gid], [p, 1000, 1000]);
  }
  assert.equal(await readFile(path.join(dir, 'keep.txt'), 'utf8'), 'old\nmore\n');
  assert.deepEqual(r.json.steps.write.changes.added.map((x: any) => x.path).sort(), ['kernel.txt', 'sub', 'sub/new.txt']);
});

test('lanes under gVisor run at once and are merged; hooks run around them', async () => {
  const f = await fixture();
  const m = path.join(f.root, 'marks.txt');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: left
    needs: []
    run: |
      ${WHERE('left')}
      trap 'released=1' USR1
      echo "left waits for the other lane"
      while [ -z "$released" ]; do sleep 0.2; done
  - id: right
    needs: []
    run: |
      ${WHERE('right')}
      trap 'released=1' USR1
      echo "right waits for the other lane"
      while [ -z "$released" ]; do sleep 0.2; done
  - id: join
    needs: [left, right]
    run: cat left.kernel right.kernel > joined.txt
`)
      .replace('defaults:\n', 'defaults:\n  isolation: gvisor\n')
      .replace('steps:', `hooks:\n  after_create: echo "after_create $PWD" >> ${m}\n  before_run: echo "before_run" >> ${m}\nsteps:`),
  );
  // Each lane waits until the test releases it, and the test releases them only once both wait: had the lanes run
  // one after the other, the first would wait until its timeout. (Their clocks, compared, said the same only when the
  // machine was quick enough to start the second within the first's sleep.)
  let runId: string | undefined;
  const waiting = new Set<string>();
  let released = false;
  const r = await execPipeline(f, file, [], {
    onLine: (line) => {
      runId ??= /^runner: run (\S+):/.exec(line)?.[1];
      const lane = /^\[(left|right)\] \1 waits for the other lane$/.exec(line)?.[1];
      if (lane) waiting.add(lane);
      if (runId && waiting.size === 2 && !released) {
        released = true;
        for (const id of containersOfRun(runId)) execFileSync('docker', ['kill', '--signal', 'USR1', id]);
      }
    },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(released, 'both lanes waited at once');
  assert.equal(ranIn(f, r.json.branch, 'left'), 'gvisor');
  assert.equal(ranIn(f, r.json.branch, 'right'), 'gvisor');
  assert.equal(git(f.project, 'show', `${r.json.branch}:joined.txt`), '4.4.0\n4.4.0');
  const marks = (await readFile(m, 'utf8')).trim().split('\n');
  // the run's worktree, then one per lane
  assert.deepEqual(marks.filter((l) => l.startsWith('after_create')).length, 3, marks.join('\n'));
  assert.ok(marks.some((l) => l.includes(`${r.json.runId}.left`)) && marks.some((l) => l.includes(`${r.json.runId}.right`)), marks.join('\n'));
  assert.ok(marks.includes('before_run'));
  assert.deepEqual(otherWorktrees(f), []);
  assert.deepEqual(containersOfRun(r.json.runId), []);
});

/** Host processes whose command line names `id` (a sandbox, its gofer, a shim). */
function processesNaming(id: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((n) => /^\d+$/.test(n))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(id)) found.push(`${pid} ${cmd.slice(0, 120)}`);
    } catch {
      // gone
    }
  }
  return found;
}

test('kill -9 of the runner mid-step under gVisor: the next command recovers it and nothing of the sandbox is left', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: long
    run: |
      echo partial > partial.txt
      echo "long step running"
      sleep 300
`).replace('defaults:\n', 'defaults:\n  isolation: gvisor\n'),
  );
  const { child, runId, done } = await startRun(file, f.home, '[long] long step running');
  const [id] = containersOfRun(runId);
  const full = execFileSync('docker', ['inspect', '-f', '{{.Id}}', id!], { encoding: 'utf8' }).trim();
  assert.equal(execFileSync('docker', ['inspect', '-f', '{{.HostConfig.Runtime}}', id!], { encoding: 'utf8' }).trim(), 'runsc');
  assert.ok(processesNaming(full).length > 0, 'the sandbox runs');
  child.kill('SIGKILL');
  await done;

  const ls = await runCli(['runs', 'ls', '--home', f.home, '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stderr, new RegExp(`run ${runId} was interrupted`));
  assert.deepEqual(containersOfRun(runId), [], 'no container left');
  await until('the sandbox\'s processes to end', async () => (processesNaming(full).length === 0 ? true : undefined), 15_000).catch(() => {
    assert.deepEqual(processesNaming(full), [], 'no process of the sandbox left');
  });
  assert.equal(existsSync(path.join(f.home, 'worktrees', runId)), false, 'no worktree left');
  assert.deepEqual(otherWorktrees(f), []);
  const rec = await record(f, runId);
  assert.deepEqual(rec.steps.map((s: any) => [s.id, s.status, s.isolation]), [['long', 'interrupted', 'gvisor']]);
  assert.equal(git(f.project, 'show', `run/${runId}:partial.txt`), 'partial', 'the step\'s partial work is on the branch');
});

/** Everything of the fixture's home on the engine: containers (also the probe's) and networks. */
function engineLeftovers(f: Fixture): string[] {
  const label = `label=dev.runner.home=${f.home}`;
  const out = (...args: string[]) => execFileSync('docker', args, { encoding: 'utf8' }).split('\n').filter(Boolean);
  return [...out('ps', '-a', '-q', '--filter', label), ...out('network', 'ls', '-q', '--filter', label)];
}

test('no such gVisor runtime: exec exits 2 before anything starts, with the fix; validate warns; serve marks the run not_started', { timeout: 90_000 }, async () => {
  const f = await fixture();
  const body = pipelineYaml(`  - id: boxed\n    isolation: gvisor\n    run: echo never > never.txt\n`);
  const file = await writePipeline(f, body);
  const env = { RUNNER_GVISOR_RUNTIME: 'nonexistent' };
  const branchesBefore = git(f.project, 'branch', '--list');
  const r = await execPipeline(f, file, [], { env });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /step boxed asks for isolation: gvisor, but the Docker engine at .* has no runtime called nonexistent \(RUNNER_GVISOR_RUNTIME\)\. Nothing was started\. .*apt-get install runsc.*isolation: runc/);
  assert.equal(git(f.project, 'branch', '--list'), branchesBefore, 'no branch');
  assert.deepEqual(otherWorktrees(f), [], 'no worktree');
  assert.deepEqual(engineLeftovers(f), [], 'no container, no network');
  const runs = existsSync(path.join(f.home, 'runs')) ? await readdir(path.join(f.home, 'runs')) : [];
  assert.deepEqual(runs, [], 'no run directory');

  const v = await runCli(['validate', file], { env });
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stderr, /warning: step boxed asks for isolation: gvisor, but .*no runtime called nonexistent.*\(a run here is refused until then\)/);

  const s = await serveFolder(f, { 'boxed.yaml': body.replace('path: project', `path: ${f.project}\n  push: never`) }, '127.0.0.1:0', { env });
  try {
    const res = await fetch(`${s.base}/api/pipelines/it/runs`, { method: 'POST' });
    assert.equal(res.status, 202, await res.clone().text());
    const { runId } = (await res.json()) as { runId: string };
    const rec = await until('the run to be marked', async () => {
      const x = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string; error?: { code: string; message: string } };
      return x.status === 'not_started' ? x : undefined;
    });
    assert.equal(rec.error?.code, 'no_gvisor');
    assert.match(rec.error!.message, /no runtime called nonexistent.*apt-get install runsc/);
    assert.deepEqual(containersOfRun(runId), []);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
  assert.equal(git(f.project, 'branch', '--list'), branchesBefore, 'no branch');
});

test('a runtime that is there but is not gVisor (RUNNER_GVISOR_RUNTIME=runc) is refused, never run under', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(`  - id: boxed\n    isolation: gvisor\n    run: ${WHERE('boxed')}\n`));
  const r = await execPipeline(f, file, [], { env: { RUNNER_GVISOR_RUNTIME: 'runc' } });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /the runtime runc \(RUNNER_GVISOR_RUNTIME\) of the Docker engine at .* is not gVisor: it runs runc, not runsc/);
  assert.equal(git(f.project, 'branch', '--list', 'run/*'), '', 'no run branch');
  assert.deepEqual(engineLeftovers(f), []);
  const v = await runCli(['validate', file], { env: { RUNNER_GVISOR_RUNTIME: 'runc' } });
  assert.match(v.stderr, /warning: .* is not gVisor: it runs runc/);
  // the engine's own runsc, named, is taken
  const ok = await execPipeline(f, file, [], { env: { RUNNER_GVISOR_RUNTIME: 'runsc' } });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ranIn(f, ok.json.branch, 'boxed'), 'gvisor');
});

test('under gVisor: a read-only cache overlay, a read-only root and a step with secrets work as under runc', async () => {
  const f = await fixture({ owner: 1000 });
  const SECRET = `gv-s3cr3t 'quoted' $HOME\nsecond line`;
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: fill
    isolation: runc
    cache: [npm]
    run: echo filled > "$npm_config_cache/mark"
  - id: reader
    cache: { npm: ro }
    run: |
      ${WHERE('reader')}
      cat "$npm_config_cache/mark" > cache-read.txt
      echo thrown-away > "$npm_config_cache/new" && echo wrote >> cache-read.txt
  - id: locked
    read_only: true
    run: |
      ${WHERE('locked')}
      if touch /etc/pwned 2>/dev/null; then echo root-writable; else echo root-read-only; fi > ro.txt
      echo tmp > /tmp/t && cat /tmp/t >> ro.txt
  - id: secretive
    secrets: [GVX_SECRET]
    run: |
      ${WHERE('secretive')}
      printf %s "$GVX_SECRET" | sha256sum | cut -c1-64 > secret.sha
`)
      .replace('defaults:\n', 'defaults:\n  isolation: gvisor\n')
      .replace('steps:', 'secrets: [GVX_SECRET]\nsteps:'),
  );
  const r = await execPipeline(f, file, [], { env: { GVX_SECRET: SECRET } });
  assert.equal(r.code, 0, r.stderr);
  const show = (p: string) => git(f.project, 'show', `${r.json.branch}:${p}`);
  for (const s of ['reader', 'locked', 'secretive']) assert.equal(ranIn(f, r.json.branch, s), 'gvisor', s);
  assert.equal(show('cache-read.txt'), 'filled\nwrote', 'the cache is read, and what the step writes to it lands in its overlay');
  const onHost = execFileSync('find', [path.join(f.home, 'caches'), '-name', 'new', '-o', '-name', 'mark'], { encoding: 'utf8' }).split('\n').filter(Boolean);
  assert.deepEqual(onHost.map((p) => path.basename(p)), ['mark'], 'nothing the read-only user wrote reached the cache');
  assert.equal(show('ro.txt'), 'root-read-only\ntmp');
  assert.equal(show('secret.sha'), createHash('sha256').update(SECRET).digest('hex'), 'the secret reached the step byte-exact');
  assert.doesNotMatch(r.stderr, /gv-s3cr3t/);
});

test('a step with egress: under gVisor reaches its allowed host through its gateway (which stays runc), and nothing else', { timeout: 120_000 }, async () => {
  const net = startFakeInternet(['allowed.example', 'denied.example']);
  try {
    const f = await fixture();
    const file = await writePipeline(
      f,
      `version: 1
name: egress
project: { path: project }
steps:
  - id: probe
    image: runner/toolchain:latest
    isolation: gvisor
    egress: [allowed.example]
    timeout: 2m
    run: |
      set +e
      ${WHERE('probe')}
      say() { echo "$1=$2" | tee -a probe.txt; }
      say http "$(curl -s -m 10 http://allowed.example/)"
      say denied "$(curl -s -m 10 -o /dev/null -w '%{http_code}' http://denied.example/)"
      say direct "$(curl -s -m 3 --noproxy '*' http://${net.ips['allowed.example']}/ ; echo " exit $?")"
`,
    );
    let gatewayRuntime = '';
    const r = await execPipeline(f, file, ['--egress-network', net.network, '--egress-private', net.subnet], {
      onLine: (line) => {
        if (gatewayRuntime || !line.includes('[probe] http=')) return;
        const gw = execFileSync('docker', ['ps', '-q', '--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.role=gateway'], { encoding: 'utf8' }).trim().split('\n')[0];
        if (gw) gatewayRuntime = execFileSync('docker', ['inspect', '-f', '{{.HostConfig.Runtime}}', gw], { encoding: 'utf8' }).trim();
      },
    });
    assert.equal(r.code, 0, r.stderr);
    assert.equal(ranIn(f, r.json.branch, 'probe'), 'gvisor');
    const said = Object.fromEntries(git(f.project, 'show', `${r.json.branch}:probe.txt`).split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
    assert.equal(said.http, 'this is allowed.example');
    assert.equal(said.denied, '403');
    assert.match(said.direct!, / exit [1-9]\d*$/, 'a direct connection to an address fails');
    assert.equal(gatewayRuntime, 'runc', 'the gateway (the runner\'s own code) runs under runc');
    assert.deepEqual(engineLeftovers(f), []);
  } finally {
    net.close();
  }
});

test('cap_add under gVisor: NET_BIND_SERVICE is given; NET_RAW is dropped by runsc, and validate says so', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: binder
    image: runner/toolchain:latest
    cap_add: [NET_BIND_SERVICE]
    run: python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 80)); print("bound")' > bind.txt
  - id: raw
    cap_add: [NET_RAW]
    run: grep CapBnd /proc/self/status > raw.txt
`).replace('defaults:\n', 'defaults:\n  isolation: gvisor\n'),
  );
  const v = await runCli(['validate', file]);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stderr, /warning: step raw asks for cap_add NET_RAW under isolation: gvisor, which gVisor's runsc drops unless the engine runs it with --net-raw/);
  assert.doesNotMatch(v.stderr, /binder/);
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:bind.txt`), 'bound');
  assert.match(git(f.project, 'show', `${r.json.branch}:raw.txt`), /CapBnd:\s+0+$/, 'what this engine\'s runsc gives: no NET_RAW');
});
