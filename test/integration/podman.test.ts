/**
 * The runner on Podman's Docker-compatible API, as root (`--engine podman`, its socket at
 * /run/podman/podman.sock): a step runs with its limits and sandbox as on Docker, a secret reaches it through the
 * prelude and is masked, its work is committed and nothing of it stays on the engine; a step behind its gateway
 * cannot reach the host on its network, and without the host's rule that keeps it so the run is refused;
 * `--engine podman` pointed at Docker is refused; and rootless Podman on this
 * cgroup v1 host (a service of uid 65534's) is refused before anything starts. Needs Podman's API
 * service with the runner's images in its store: scripts/ensure-podman.sh starts it and copies them.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { chmod, chown, mkdir, mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import { git, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const SOCKET = '/run/podman/podman.sock';
const fixture = projectsForThisFile();
/** the environment of a runner told `--engine podman` and nothing else: no DOCKER_HOST of the test process's */
const env = (): NodeJS.ProcessEnv => ({ DOCKER_HOST: '', CONTAINER_HOST: '', RUNNER_ENGINE: '' });
const podman = (...args: string[]) => execFileSync('podman', args, { encoding: 'utf8' }).trim();

before(() => {
  let answer = '';
  try {
    answer = execFileSync('curl', ['-fsS', '--max-time', '5', '--unix-socket', SOCKET, 'http://d/_ping'], { encoding: 'utf8' });
  } catch {
    // said below
  }
  assert.equal(answer, 'OK', `Podman's API does not answer at ${SOCKET}: run scripts/ensure-podman.sh (as root) first`);
  for (const image of ['runner/base:latest', 'runner/toolchain:latest', 'runner/gateway:latest']) {
    assert.ok(podman('images', '-q', image), `Podman has no ${image}: run scripts/ensure-podman.sh (it copies the runner's images from Docker's store)`);
  }
});

test('a step on podman: its limits, no capabilities, no new privileges, a read-only root, its secret masked, its work committed, nothing left', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: podman
project: { path: project }
secrets: [RUNNER_TEST_TOKEN]
defaults:
  image: runner/base:latest
  resources: { memory: 256m, cpus: 1, pids: 128 }
  timeout: 2m
steps:
  - id: inspect
    read_only: true
    secrets: [RUNNER_TEST_TOKEN]
    run: |
      {
        echo "uid=$(id -u)"
        grep -E '^(CapEff|NoNewPrivs)' /proc/self/status
        echo "memory=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"
        echo "pids=$(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)"
        echo "nofile=$(ulimit -n)"
        if touch /etc/evil 2>/dev/null; then echo "etc=written"; else echo "etc=refused"; fi
        touch /tmp/scratch && echo "tmp=ok"
        echo "interfaces-besides-lo=$(grep -cv -E 'lo:|Inter|face' /proc/net/dev || true)"
        test "$RUNNER_TEST_TOKEN" = podman-secret-0123456789 && echo "secret=arrived"
      } > inspect.txt
      echo "the token: $RUNNER_TEST_TOKEN"
`,
  );
  const r = await runCli(['exec', file, '--json', '--home', f.home, '--engine', 'podman'], { env: { ...env(), RUNNER_TEST_TOKEN: 'podman-secret-0123456789' } });
  assert.equal(r.code, 0, r.stderr);
  const seen = git(f.project, 'show', `${r.json.branch}:inspect.txt`);
  assert.match(seen, /^uid=65532$/m);
  assert.match(seen, /^CapEff:\s+0{16}$/m);
  assert.match(seen, /^NoNewPrivs:\s+1$/m);
  assert.match(seen, /^memory=268435456$/m);
  assert.match(seen, /^pids=128$/m);
  assert.match(seen, /^nofile=4096$/m);
  assert.match(seen, /^etc=refused$/m);
  assert.match(seen, /^tmp=ok$/m);
  assert.match(seen, /^interfaces-besides-lo=0$/m);
  assert.match(seen, /^secret=arrived$/m);
  assert.match(r.stdout + r.stderr, /the token: \*\*\*/);
  assert.doesNotMatch(r.stdout + r.stderr, /podman-secret-0123456789/);
  assert.equal(podman('ps', '-a', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`), '', 'no container of the run is left on podman');
  assert.equal(podman('network', 'ls', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`), '', 'no network of the run is left on podman');
});

test("a step behind its gateway on podman reaches nothing of the host's on its network (netavark gives the host an address there)", { timeout: 240_000 }, async () => {
  let hits = 0;
  const server = http.createServer((_req, res) => {
    hits++;
    res.end('host');
  });
  // every address of this machine, the step network's gateway address among them
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve));
  after(() => server.close());
  const port = (server.address() as AddressInfo).port;
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: podman-gateway
project: { path: project }
defaults:
  image: runner/toolchain:latest
  resources: { memory: 256m, cpus: 1, pids: 128 }
  timeout: 2m
steps:
  - id: probe
    egress: [allowed.invalid]
    run: |
      set +e
      gw=$(hostname -I | awk '{print $1}' | sed 's/\\.[0-9]*$/.1/')
      echo "gateway-address=$gw" > probe.txt
      echo "host=$(curl -s -m 5 --noproxy '*' http://$gw:${port}/ ; echo " exit $?")" >> probe.txt
      echo "via-gateway=$(curl -s -m 5 -o /dev/null -w '%{http_code}' http://$gw:${port}/)" >> probe.txt
`,
  );
  const r = await runCli(['exec', file, '--json', '--home', f.home, '--engine', 'podman'], { env: env() });
  assert.equal(r.code, 0, r.stderr);
  const seen = git(f.project, 'show', `${r.json.branch}:probe.txt`);
  assert.match(seen, /^gateway-address=\d+\.\d+\.\d+\.1$/m);
  assert.match(seen, /^host= exit (7|28)$/m, 'the host answers nothing on the step network');
  // the step reaches its gateway across its network (Docker's FORWARD policy would drop it: ensure-podman.sh)
  assert.match(seen, /^via-gateway=403$/m, "the gateway answers, and refuses the host's address");
  assert.equal(hits, 0, 'no request of the step reached the host');
  assert.equal(podman('network', 'ls', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`), '', "the step's network is gone");
});

test('--engine podman pointed at a Docker engine is refused before anything starts, saying so', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, `version: 1\nname: p\nproject: { path: project }\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: 'true'\n`);
  const r = await runCli(['exec', file, '--home', f.home, '--engine', 'podman'], { env: { ...env(), DOCKER_HOST: 'unix:///var/run/docker.sock' } });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /--engine podman, but the engine at unix:\/\/\/var\/run\/docker\.sock is not Podman/);
  assert.doesNotMatch(r.stderr, /▶ step a/);
});

test('rootless podman on this cgroup v1 host is refused before anything starts: it could not cap memory or processes', { timeout: 120_000 }, async () => {
  assert.match(readFileSync('/proc/self/cgroup', 'utf8'), /^\d+:[^:]*memory/m, 'this test is of a cgroup v1 host');
  // a user's own Podman service: uid 65534 (nobody, no subuid range: one uid mapped), its home and runtime directory here
  const dir = await mkdtemp(path.join(os.tmpdir(), 'runner-podman-rootless-'));
  await chmod(dir, 0o755);
  const home = path.join(dir, 'home');
  const run = path.join(dir, 'run');
  await mkdir(home);
  await mkdir(run, { mode: 0o700 });
  await chown(home, 65534, 65534);
  await chown(run, 65534, 65534);
  const socket = path.join(run, 'podman.sock');
  const service = spawn('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', 'env', '-i', `HOME=${home}`, `XDG_RUNTIME_DIR=${run}`, 'PATH=/usr/bin:/bin', 'podman', 'system', 'service', '--time=0', `unix://${socket}`], { stdio: 'ignore' });
  after(async () => {
    service.kill();
    // rootless Podman keeps a pause process holding its user namespace: it goes too
    const pause = path.join(run, 'libpod/tmp/pause.pid');
    if (existsSync(pause)) {
      try {
        process.kill(Number(readFileSync(pause, 'utf8')), 'SIGKILL');
      } catch {
        // gone already
      }
    }
    await rm(dir, { recursive: true, force: true });
  });
  for (let i = 0; i < 100 && !existsSync(socket); i++) await new Promise((r) => setTimeout(r, 200));
  assert.ok(existsSync(socket), "the user's Podman service made its socket");
  const f = await fixture();
  const file = await writePipeline(f, `version: 1\nname: p\nproject: { path: project }\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: 'true'\n`);
  const r = await runCli(['exec', file, '--home', f.home, '--engine', 'podman'], { env: { ...env(), DOCKER_HOST: `unix://${socket}` } });
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, new RegExp(`Podman at unix://${socket.replace(/[.]/g, '\\.')} is rootless on a cgroup v1 host`));
  assert.match(r.stderr, /cannot enforce a step's memory or process limits/);
  assert.match(r.stderr, /cgroup v2 whose systemd delegates the memory, pids and cpu controllers/);
  assert.doesNotMatch(r.stderr, /▶ step a/, 'no step started');
});

test("root podman on a host that lacks the rule for steps' networks is refused before anything starts, with the rule to add", { timeout: 60_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, `version: 1\nname: p\nproject: { path: project }\nsteps:\n  - id: a\n    image: runner/base:latest\n    run: 'true'\n`);
  execFileSync('iptables', ['-D', 'INPUT', '-i', 'rnri+', '-j', 'DROP']);
  let r;
  try {
    r = await runCli(['exec', file, '--home', f.home, '--engine', 'podman'], { env: env() });
  } finally {
    execFileSync('iptables', ['-I', 'INPUT', '-i', 'rnri+', '-j', 'DROP']);
  }
  assert.equal(r.code, 3, r.stderr);
  assert.match(r.stderr, /the host has no such rule: run scripts\/ensure-podman\.sh as root, or add the rule yourself: iptables -I INPUT -i rnri\+ -j DROP/);
  assert.doesNotMatch(r.stderr, /▶ step a/, 'no step started');
});
