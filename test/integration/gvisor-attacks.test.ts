/**
 * Attacks on `isolation: gvisor`, played for real (real engine, real runsc,
 * real git): a step asked to run under gVisor runs under it or does not run,
 * whatever the operator's flags, the flow around it (for_each, lanes,
 * retries, review loops), an engine whose runtimes change under a runner
 * that lives for days, a runner killed during its probe, or a kill -9 in the
 * middle of the step. And the caps under gVisor: a fork bomb as root (and as
 * a root that raised its own process limit), a memory bomb, a file past its
 * size, a full /tmp, a step that looks for a way out, a step that prints
 * terminal controls and forges what its record says.
 *
 * Each step proves where it ran by what its kernel says: gVisor's is 4.4.0.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Docker from 'dockerode';
import { CLI, execPipeline, git, IMAGE, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';
import { DockerRuntime } from '../../src/container/local/docker.js';
import type { ContainerSpec } from '../../src/container/runtime.js';

const fixture = projectsForThisFile();
const GVISOR_KERNEL = '4.4.0';

function pipeline(name: string, steps: string, extra = ''): string {
  return `version: 1
name: ${name}
project:
  path: project
${extra}defaults:
  image: ${IMAGE}
  isolation: gvisor
  resources: { memory: 256m, cpus: 1, pids: 64 }
  timeout: 1m
steps:
${steps}`;
}

async function record(f: Fixture, runId: string): Promise<any> {
  return JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
}

function probeContainers(): string[] {
  return execFileSync('docker', ['ps', '-a', '-q', '--no-trunc', '--filter', 'label=dev.runner.role=gvisor-probe'], { encoding: 'utf8' }).split('\n').filter(Boolean);
}

test('a file that asks for gVisor keeps it through for_each lanes, retries and a review loop; --isolation runc and RUNNER_ISOLATION=runc never lower it', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(
      'keep',
      `  - id: plan
    outputs: [tasks]
    run: |
      uname -r > k-plan.txt
      echo 'tasks=["a","b"]' >> "$RUNNER_OUTPUT"
  - id: build
    needs: [plan]
    for_each: \${{ steps.plan.outputs.tasks }}
    run: uname -r > "k-build-$RUNNER_ITEM.txt"
  - id: flaky
    needs: [build]
    retries: { max: 1, backoff: 1s }
    run: |
      uname -r > "k-flaky-$RUNNER_ATTEMPT.txt"
      test "$RUNNER_ATTEMPT" -ge 2
  - id: fix
    needs: [flaky]
    max_visits: 2
    run: uname -r > "k-fix-$RUNNER_ATTEMPT.txt"
  - id: review
    needs: [fix]
    outputs: [verdict]
    route: { output: verdict, to: { AGAIN: fix } }
    run: |
      uname -r > "k-review-$RUNNER_ATTEMPT.txt"
      if [ "$RUNNER_ATTEMPT" = 1 ]; then echo verdict=AGAIN; else echo verdict=OK; fi >> "$RUNNER_OUTPUT"
  - id: plain
    needs: [review]
    isolation: runc
    run: uname -r > k-plain.txt
`,
      'max_parallel: 2\n',
    ),
  );
  // a careless operator: both ways of saying runc for the whole runner
  const r = await execPipeline(f, file, ['--isolation', 'runc'], { env: { RUNNER_ISOLATION: 'runc' } });
  assert.equal(r.code, 0, r.stderr);
  const runId = r.json.runId;
  const branch = `run/${runId}`;
  const files = git(f.project, 'ls-tree', '--name-only', branch).split('\n').filter((n) => n.startsWith('k-'));
  assert.deepEqual(files.sort(), ['k-build-a.txt', 'k-build-b.txt', 'k-fix-1.txt', 'k-fix-2.txt', 'k-flaky-1.txt', 'k-flaky-2.txt', 'k-plain.txt', 'k-plan.txt', 'k-review-1.txt', 'k-review-2.txt']);
  for (const name of files.filter((n) => n !== 'k-plain.txt')) {
    assert.equal(git(f.project, 'show', `${branch}:${name}`), GVISOR_KERNEL, `${name} was written outside gVisor`);
  }
  assert.notEqual(git(f.project, 'show', `${branch}:k-plain.txt`), GVISOR_KERNEL, 'the step that says runc ran under gVisor');

  // the record says what each container saw: every instance, attempt and visit
  const rec = await record(f, runId);
  const said = rec.steps.map((s: any) => `${s.name ?? s.id}:${s.isolation}`);
  assert.equal(rec.steps.length, 10, JSON.stringify(said));
  for (const s of rec.steps) assert.equal(s.isolation, s.id === 'plain' ? 'runc' : 'gvisor', JSON.stringify(said));
  const show = await runCli(['runs', 'show', runId, '--home', f.home]);
  assert.equal(show.code, 0, show.stderr);
  assert.equal((show.stdout.match(/under gvisor/g) ?? []).length, 9, show.stdout);
  assert.match(show.stdout, /plain .*under runc/);
});

test('RUNNER_GVISOR_RUNTIME naming runc, or a runtime the engine does not have: refused before anything starts (exit 2), with the fix', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline('named', '  - id: only\n    run: uname -r > k.txt\n'));
  for (const wanted of ['runc', 'no-such-runtime']) {
    const r = await execPipeline(f, file, [], { env: { RUNNER_GVISOR_RUNTIME: wanted } });
    assert.equal(r.code, 2, `${wanted}: ${r.stdout}\n${r.stderr}`);
    // a name that is there is said to be something else; a name that is not, to be missing
    assert.match(r.stderr, wanted === 'runc' ? /the runtime runc \(RUNNER_GVISOR_RUNTIME\) .* is not gVisor: it runs runc/ : new RegExp(`has no runtime called ${wanted}`));
    assert.match(r.stderr, /Nothing was started/);
    assert.match(r.stderr, /daemon\.json/);
  }
  assert.equal(existsSync(path.join(f.home, 'runs')) ? readdirSync(path.join(f.home, 'runs')).length : 0, 0, 'a run was made');
  assert.deepEqual(git(f.project, 'branch', '--list', 'run/*'), '', 'a run branch was made');
});

/**
 * A dockerode whose `docker info` says what the test wants about runtimes, the
 * rest of the engine real: `runner serve` living through an operator's edit
 * of daemon.json and a reload (SIGHUP), without touching the real engine's.
 */
function engineSaying(real: Docker, runtimes: () => Record<string, unknown>): { docker: Docker; created: string[] } {
  const created: string[] = [];
  const docker = Object.create(real) as Docker;
  docker.info = (async () => ({ ...(await real.info()), Runtimes: runtimes() })) as Docker['info'];
  docker.createContainer = (async (opts: Docker.ContainerCreateOptions) => {
    created.push(`${opts.Labels?.['dev.runner.role'] ?? 'step'}:${opts.HostConfig?.Runtime ?? 'default'}`);
    return real.createContainer(opts);
  }) as Docker['createContainer'];
  return { docker, created };
}

test('a runtime removed, or pointed at runc, after a run found gVisor: the next run and the next container are refused, never started under runc', async () => {
  const real = new Docker();
  const actual = ((await real.info()) as { Runtimes: Record<string, { path?: string }> }).Runtimes;
  const runsc = Object.entries(actual).find(([, r]) => /(^|\/)runsc[^/]*$/.test(r.path ?? ''));
  assert.ok(runsc, `this engine has no runsc runtime: ${JSON.stringify(actual)}`);
  let runtimes: Record<string, unknown> = actual;
  const { docker, created } = engineSaying(real, () => runtimes);
  const runtime = new DockerRuntime(docker);
  const steps = [{ id: 'build', isolation: 'gvisor' as const, image: IMAGE }];
  const spec: ContainerSpec = {
    name: `runner-gva-${process.pid}-${Date.now()}`,
    image: IMAGE,
    cmd: ['true'],
    env: {},
    workingDir: '/',
    user: '65532:65532',
    mounts: [],
    memoryBytes: 64 * 1024 ** 2,
    cpus: 1,
    pids: 16,
    openFiles: 256,
    fileSizeBytes: 1024 ** 2,
    readOnlyRoot: true,
    capAdd: [],
    network: 'none',
    labels: { 'dev.runner.step-id': 'build' },
    isolation: 'gvisor',
  };

  await runtime.checkIsolation(steps);
  const probes = created.length;
  assert.ok(probes >= 1, 'no probe was made');
  await runtime.checkIsolation(steps);
  assert.equal(created.length, probes, 'the same runtime was probed again');

  // removed from daemon.json and reloaded: the next run (and its container) is refused with the fix
  runtimes = Object.fromEntries(Object.entries(actual).filter(([n]) => n !== runsc[0]));
  await assert.rejects(runtime.checkIsolation(steps), (e: any) => e.code === 'no_gvisor' && /Nothing was started/.test(e.message));
  await assert.rejects(runtime.create(spec), (e: any) => e.code === 'no_gvisor');

  // the same name, now runc's: never taken for gVisor
  runtimes = { ...actual, [runsc[0]]: { path: 'runc' } };
  await assert.rejects(runtime.checkIsolation(steps), (e: any) => e.code === 'no_gvisor');
  await assert.rejects(runtime.create(spec), (e: any) => e.code === 'no_gvisor');

  // gVisor under another name the engine does not really have: probed, and refused when it cannot start
  runtimes = { runc: actual.runc, 'gvisor-renamed': actual[runsc[0]] };
  await assert.rejects(runtime.checkIsolation(steps), (e: any) => e.code === 'gvisor_broken' && /gvisor-renamed/.test(e.message));

  // and back: runs again, under runsc
  runtimes = actual;
  await runtime.checkIsolation(steps);
  const c = await runtime.create(spec);
  try {
    const info = await real.getContainer(c.id).inspect();
    assert.equal(info.HostConfig.Runtime, runsc[0]);
  } finally {
    await c.remove();
  }
  assert.deepEqual(
    created.filter((s) => s.startsWith('step:')),
    [`step:${runsc[0]}`],
    'a step container was created while the engine had no gVisor',
  );
  assert.ok(created.every((s) => !s.endsWith(':runc') && !s.endsWith(':default')), created.join(' '));
});

test('a runner killed -9 during its gVisor probe leaves the probe container behind; the next probe removes it', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline('probe', '  - id: only\n    run: "true"\n'));
  // Other runners on this engine (other test files at the same time) make probes too, and remove the ones whose
  // owner is dead: only this runner's probe is watched (by its owner label, host/pid), and one removed by another's
  // probe before this test looked counts as a try that proved nothing.
  let left: string[] = [];
  for (let attempt = 1; attempt <= 5 && !left.length; attempt++) {
    // the engine tells us the moment a probe container exists; the runner is killed then
    const events = spawn('docker', ['events', '--filter', 'label=dev.runner.role=gvisor-probe', '--filter', 'event=create', '--format', '{{.ID}} {{index .Actor.Attributes "dev.runner.probe-owner"}}'], { stdio: ['ignore', 'pipe', 'ignore'] });
    await new Promise((r) => setTimeout(r, 300));
    const runner = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home], { env: { ...process.env, CI: 'true' }, stdio: 'ignore' });
    const exited = new Promise((r) => runner.on('close', r));
    const owner = `${os.hostname()}/${runner.pid}`;
    let probe: string | undefined;
    events.stdout.on('data', (b: Buffer) => {
      for (const line of b.toString().split('\n')) {
        const [id, by] = line.trim().split(' ');
        if (!probe && id && by === owner) {
          probe = id;
          runner.kill('SIGKILL');
        }
      }
    });
    await exited;
    events.kill();
    if (!probe) continue;
    try {
      const label = execFileSync('docker', ['inspect', '--format', '{{index .Config.Labels "dev.runner.probe-owner"}}', probe], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
      assert.match(label, new RegExp(`^${os.hostname()}/\\d+$`));
      left = [probe];
    } catch (err) {
      if (err instanceof assert.AssertionError) throw err;
      // gone: removed by the runner before the kill landed, or by another runner's probe
    }
  }
  assert.ok(left.length, 'in 5 tries the kill never landed during the probe: the test proved nothing');

  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(probeContainers().filter((id) => left.includes(id)), [], 'the probe left behind is still there');
});

/**
 * The end of a step script that runs a fork bomb and watches its own sandbox meanwhile. The step's shell forks once
 * (the bomb's first shell, while the sandbox is still empty) and then becomes a bash (exec: no fork) that counts the
 * sandbox's processes with builtins only, so no refused fork can stop it; it keeps the most it saw in the file it is
 * given and ends after 8 s of the sandbox's clock. So the step ends on its own (or when the sandbox dies at the host's backstop),
 * never by whether a fork of the step's own shell came before or after the bomb filled the cap: that raced with the
 * machine's load (a fresh clone's CI found the root bomb step `completed` where it had always been `failed`).
 */
const bombAndWatch = (most: string) => `(bomb() { bomb | bomb & }; bomb) &
      exec bash -c 'most=0; while [ $SECONDS -lt 8 ]; do n=0; for p in /proc/[0-9]*; do n=$((n+1)); done; if [ $n -gt $most ]; then most=$n; echo $most > ${most}; fi; done'`;

test('a fork bomb under gVisor as root is refused inside the sandbox; a root that raised its own process limit is still ended well before its timeout; the host and the next step are fine', async (t) => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(
      'bombs',
      `  - id: rootbomb
    user: "0:0"
    continue_on_error: true
    timeout: 2m
    run: |
      uname -r > k-rootbomb.txt
      ulimit -p > nproc.txt
      ${bombAndWatch('most-rootbomb.txt')}
  - id: raised
    user: "0:0"
    cap_add: [SYS_RESOURCE]
    continue_on_error: true
    timeout: 2m
    resources: { memory: 1g }
    run: |
      ulimit -p unlimited
      ulimit -p > raised.txt
      ${bombAndWatch('most-raised.txt')}
  - id: after
    run: uname -r > k-after.txt
`,
    ),
  );
  const r = await execPipeline(f, file, [], { tailOnly: true });
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  const rec = await record(f, r.json.runId);
  const [rootbomb, raised, after] = rec.steps;
  const branch = `run/${r.json.runId}`;
  const stepLog = (id: string) => readFile(path.join(f.home, 'runs', r.json.runId, 'steps', `${id}.log`), 'utf8');

  // Root is held to the step's process cap inside the sandbox: its limit is the cap, the sandbox never held more
  // processes than that, and its kernel refused the bomb's forks (said in the log by the bomb's own shells, or
  // seen by the runner as the sandbox at its cap). The step ended on its own, not at its timeout.
  assert.equal(git(f.project, 'show', `${branch}:k-rootbomb.txt`), GVISOR_KERNEL);
  assert.equal(git(f.project, 'show', `${branch}:nproc.txt`), '64', 'root in the sandbox has the step\'s process cap as its limit');
  const most = Number(git(f.project, 'show', `${branch}:most-rootbomb.txt`));
  t.diagnostic(`root bomb: the sandbox held at most ${most} processes; status ${rootbomb.status}, limits ${JSON.stringify(rootbomb.limits)}, exit ${rootbomb.exitCode}`);
  assert.ok(['completed', 'failed'].includes(rootbomb.status), rootbomb.status);
  assert.ok(most > 2 && most <= 64, `the sandbox held at most ${most} processes, its cap is 64`);
  assert.ok(rootbomb.limits.includes('pids') || /Cannot fork/.test(await stepLog('rootbomb')), 'the sandbox refused the bomb its forks');
  assert.equal(rootbomb.timedOut, false, 'the sandbox kept forking until its timeout');
  assert.equal(rootbomb.oomKilled, false);

  // A root that raised its own limit: the host's cgroup (the backstop) bounds the sandbox, which ends well before
  // its timeout, either on its own or when the backstop refuses its threads.
  assert.equal(git(f.project, 'show', `${branch}:raised.txt`), 'unlimited', 'root did not raise its limit: the backstop was not reached');
  // only said: where the backstop ends the sandbox before its watcher's first count (a loaded clean-clone CI run), there is no count
  let mostRaised = 'an unknown number of';
  try {
    mostRaised = git(f.project, 'show', `${branch}:most-raised.txt`);
  } catch {
    // the sandbox ended before the watcher wrote
  }
  t.diagnostic(`raised bomb: the sandbox held at most ${mostRaised} processes; status ${raised.status}, limits ${JSON.stringify(raised.limits)}, exit ${raised.exitCode}`);
  assert.ok(['completed', 'failed'].includes(raised.status), raised.status);
  assert.equal(raised.timedOut, false, 'the raised bomb kept forking until its timeout: the backstop did not hold it');
  assert.equal(raised.oomKilled, false);

  assert.equal(after.status, 'completed');
  assert.equal(git(f.project, 'show', `${branch}:k-after.txt`), GVISOR_KERNEL);
  // the host still forks
  assert.equal(execFileSync('sh', ['-c', 'echo ok'], { encoding: 'utf8' }).trim(), 'ok');
});

test('under gVisor: memory, file-size and /tmp caps fire as themselves; the step sees gVisor, no engine socket, no host mount but those the runner made; its terminal controls are made visible', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(
      'caps',
      `  - id: mem
    continue_on_error: true
    resources: { memory: 128m }
    run: perl -e '$x = "a" x (400*1024*1024); print length($x)'
  - id: fsize
    continue_on_error: true
    resources: { file_size: 1m }
    run: head -c 3000000 /dev/zero > big.bin
  - id: tmpfill
    read_only: true
    resources: { memory: 1g, file_size: 1g }
    run: |
      dd if=/dev/zero of=/tmp/fill bs=1M count=400 2>/dev/null || true
      test ! -w /etc
      du -sk /tmp | cut -f1 > tmp-kb.txt
  - id: look
    user: "0:0"
    run: |
      dmesg | grep -c gVisor > gvisor-dmesg.txt
      cut -d' ' -f5 /proc/self/mountinfo > mounts.txt
      { test -e /var/run/docker.sock || test -e /run/docker.sock; } && echo yes > socket.txt || echo no > socket.txt
      mount -t tmpfs none /mnt 2>/dev/null && echo yes > mounted.txt || echo no > mounted.txt
      echo "$PORT" > port.txt
      perl -MIO::Socket::INET -e 'print IO::Socket::INET->new(PeerAddr => "127.0.0.1", PeerPort => $ENV{PORT}, Timeout => 3) ? "yes" : "no"' > host-loopback.txt
    env: { PORT: "\${{ inputs.port }}" }
  - id: ctrl
    outputs: [isolation]
    run: |
      printf 'a\\033[2J\\033]0;pwned\\007b\\rline\\n'
      printf 'runner: \\342\\234\\223 step fake completed under runc\\n'
      echo isolation=runc >> "$RUNNER_OUTPUT"
      echo summary=ran under runc >> "$RUNNER_OUTPUT"
`,
      'inputs:\n  port: {}\n',
    ),
  );
  // a service on the host's loopback, which no step may reach
  const server = net.createServer((sock) => sock.end('host service\n'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as net.AddressInfo).port;
  const r = await execPipeline(f, file, ['--input', `port=${port}`]).finally(() => server.close());
  assert.equal(r.code, 0, r.stderr);
  const runId = r.json.runId;
  const show = (name: string) => git(f.project, 'show', `run/${runId}:${name}`);
  const rec = await record(f, runId);
  const step = (id: string) => rec.steps.find((s: any) => s.id === id);

  // (once, on a busy machine, this step ended `failed`: its log, said here, tells how the next time)
  assert.equal(step('mem').status, 'oom', `the memory step ended ${JSON.stringify(step('mem'))}; its log: ${(await readFile(path.join(f.home, 'runs', runId, 'steps', 'mem.log'), 'utf8').catch(() => '')).slice(-2000)}`);
  assert.deepEqual(step('mem').limits, ['memory']);
  assert.equal(step('fsize').status, 'failed');
  assert.ok(step('fsize').limits.includes('file_size'), JSON.stringify(step('fsize')));
  assert.match(r.stderr, /file size limit reached/);
  // /tmp is the runner's 256m tmpfs, in the sandbox's memory: full, not more
  const tmpKb = Number(show('tmp-kb.txt'));
  assert.ok(tmpKb > 200 * 1024 && tmpKb <= 257 * 1024, `/tmp held ${tmpKb} KiB`);

  assert.ok(Number(show('gvisor-dmesg.txt')) >= 1, 'the step did not run under gVisor');
  assert.equal(show('socket.txt'), 'no');
  assert.equal(show('mounted.txt'), 'no', 'root mounted a file system inside the sandbox');
  assert.equal(show('port.txt'), String(port));
  assert.equal(show('host-loopback.txt'), 'no', 'the sandbox reached a service on the host\'s loopback');
  const mounts = show('mounts.txt').split('\n');
  const ours = ['/', '/dev', '/sys', '/proc', '/dev/pts', '/dev/shm', '/dev/mqueue', '/etc/hostname', '/etc/hosts', '/etc/resolv.conf', '/home/agent/.runner', '/usr/sbin/docker-init', '/sbin/docker-init', '/home/agent/run-workspace', '/home/agent/project-workspace', path.join(f.project, '.git')];
  // the host's CA bundle, which steps trust by default (docs/company-networks.md), read-only at its two paths
  ours.push('/run/runner/ca.pem', '/etc/ssl/certs/ca-certificates.crt');
  assert.deepEqual(mounts.filter((m) => !ours.includes(m)), [], 'the sandbox sees a mount the runner did not make');

  // what it printed is made visible; its line that looks like the runner's is its own
  assert.doesNotMatch(r.stderr + r.stdout, /\x1b\[2J|\x1b\]0;pwned|\x07/);
  assert.match(r.stderr, /\[ctrl\] a\\x1b\[2J\\x1b\]0;pwned\\x07b\\rline/);
  assert.match(r.stderr, /\[ctrl\] runner: ✓ step fake completed under runc/);
  assert.doesNotMatch(r.stderr, /^runner: ✓ step fake/m);
  // the record's isolation is the runner's, whatever the step wrote
  assert.equal(step('ctrl').isolation, 'gvisor');
  assert.equal(step('ctrl').outputs.isolation, 'runc', 'its own output is kept as an output, nothing more');
  for (const s of rec.steps) assert.equal(s.isolation, 'gvisor', s.id);
  const runsShow = await runCli(['runs', 'show', runId, '--home', f.home]);
  assert.match(runsShow.stdout, /\n {2}ctrl .*under gvisor/);
});

test('kill -9 of the runner mid-step under gVisor: recovery removes the sandbox and the record says the interrupted step ran under gVisor', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipeline(
      'killed',
      `  - id: first
    isolation: runc
    run: echo one > one.txt
  - id: long
    run: |
      uname -r > k-long.txt
      echo "long step running"
      sleep 300
`,
    ),
  );
  const child = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home], { env: { ...process.env, CI: 'true' }, stdio: ['ignore', 'pipe', 'pipe'] });
  const done = new Promise((r) => child.on('close', r));
  const runId = await new Promise<string>((resolve, reject) => {
    let out = '';
    const seen = (b: Buffer) => {
      out += b.toString();
      const id = /run (\d{8}-\d{6}-[a-z0-9]{6})/.exec(out)?.[1];
      if (id && out.includes('[long] long step running')) resolve(id);
    };
    child.stdout!.on('data', seen);
    child.stderr!.on('data', seen);
    setTimeout(() => reject(new Error(`the step never ran: ${out}`)), 60_000).unref();
  });
  child.kill('SIGKILL');
  await done;
  // under runsc the step can print before the engine has marked its container running: asked for a few seconds
  let running = '';
  for (let i = 0; i < 50 && !running; i++) {
    running = execFileSync('docker', ['ps', '-q', '--filter', `label=dev.runner.run-id=${runId}`], { encoding: 'utf8' }).trim();
    if (!running) await new Promise((r) => setTimeout(r, 100));
  }
  const states = () => execFileSync('docker', ['ps', '-a', '--format', '{{.ID}} {{.Status}}', '--filter', `label=dev.runner.run-id=${runId}`], { encoding: 'utf8' });
  assert.ok(running, `the killed runner left no sandbox running: ${states()}`);
  assert.equal(execFileSync('docker', ['inspect', '--format', '{{.HostConfig.Runtime}}', running], { encoding: 'utf8' }).trim(), 'runsc');

  const ls = await runCli(['runs', 'ls', '--home', f.home]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.equal(execFileSync('docker', ['ps', '-a', '-q', '--filter', `label=dev.runner.run-id=${runId}`], { encoding: 'utf8' }).trim(), '', 'the sandbox is still there');
  const rec = await record(f, runId);
  assert.deepEqual(
    rec.steps.map((s: any) => [s.id, s.status, s.isolation]),
    [
      ['first', 'completed', 'runc'],
      ['long', 'interrupted', 'gvisor'],
    ],
  );
  assert.equal(git(f.project, 'show', `run/${runId}:k-long.txt`), GVISOR_KERNEL);
  const show = await runCli(['runs', 'show', runId, '--home', f.home]);
  assert.match(show.stdout, /\n {2}long +interrupted .*under gvisor/);
  assert.match(show.stdout, /\n {2}first +completed .*under runc/);
});
