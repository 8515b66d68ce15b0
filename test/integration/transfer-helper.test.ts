/**
 * The swarm transfer helper (images/gateway/transfer/runner-transfer.c), as
 * the gateway image carries it and the runner hands it over
 * (src/container/swarm/transfer-helper.ts), against the real transfer server, in a
 * local container of an image with a /bin/sh and nothing else (busybox, no
 * bash, no tar), set up as a swarm step's is: its user not the files' owner,
 * all capabilities dropped, an init, the token as a file, the workspace on
 * the scratch mounts swarm.ts gives. No swarm is needed: the helper only
 * speaks TCP to the runner. RUNNER_GATEWAY_IMAGE picks a gateway image built
 * from a branch (IMAGES=gateway IMAGE_TAG=… images/build.sh). The last test
 * runs git in the step (runner/toolchain, which has it) against the `.git`
 * the runner sends with the worktree (src/workspace/git-copy.ts).
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { chmod, lstat, mkdir, mkdtemp, readdir, readFile, readlink, rm, symlink, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import Docker from 'dockerode';
import tarStream from 'tar-stream';
import { DockerRuntime } from '../../src/container/local/docker.js';
import type { ContainerSpec } from '../../src/container/runtime.js';
import { swarmTransport } from '../../src/container/engine.js';
import { scratchMount } from '../../src/container/swarm/task.js';
import { transferHelper } from '../../src/container/swarm/transfer-helper.js';
import { checkGatewayImage, GATEWAY_IMAGE } from '../../src/gateway/host/image.js';
import { CONTAINER_PATHS } from '../../src/plan/render.js';
import { stagingFor, TransferServer } from '../../src/container/swarm/transfer-server.js';
import { Git } from '../../src/git/git.js';
import { makeGitCopy } from '../../src/workspace/git-copy.js';
import { commitAll, createWorktree, resolveBase } from '../../src/workspace/git-worktree.js';
import { inspectProject } from '../../src/workspace/project.js';
import { busyboxImages, type BusyboxImages } from '../fixtures/busybox-image.js';
import { git as hostGit, projectsForThisFile } from '../fixtures/project.js';

const api = new Docker();
const server = new TransferServer();
const tag = randomBytes(4).toString('hex');
let images: BusyboxImages | undefined;
const NETWORK = `runner-test-xfer-${tag}`;
const roots: string[] = [];
const containers: Docker.Container[] = [];
let helperFile = '';
let gateway = '';
const owner = { uid: process.getuid!(), gid: process.getgid!() };
const projectFixture = projectsForThisFile();

async function tmp(prefix: string): Promise<string> {
  const d = await mkdtemp(path.join(os.tmpdir(), prefix));
  roots.push(d);
  return d;
}

before(async () => {
  // the helper as a swarm step gets it: from the gateway image, by the runner's own code
  const bytes = await transferHelper(api, GATEWAY_IMAGE, () => checkGatewayImage(new DockerRuntime(api)));
  const dir = await tmp('runner-xfer-helper-');
  helperFile = path.join(dir, 'runner-transfer');
  await writeFile(helperFile, bytes, { mode: 0o555 });
  images = await busyboxImages();
  // a network of the test's own; the host (where the server listens, on every address) is its gateway
  await api.createNetwork({ Name: NETWORK, Driver: 'bridge', Labels: { 'dev.runner.test': 'transfer-helper' } });
  gateway = ((await api.getNetwork(NETWORK).inspect()) as { IPAM: { Config: Array<{ Gateway: string }> } }).IPAM.Config[0]!.Gateway;
  await server.listen();
});

after(async () => {
  for (const c of containers) await c.remove({ force: true, v: true }).catch(() => undefined);
  await api.getNetwork(NETWORK).remove().catch(() => undefined);
  await images?.remove();
  await server.close();
  await Promise.all(roots.map((r) => rm(r, { recursive: true, force: true })));
});

/** A step's container as swarm.ts makes it, with the helper and the token mounted where the configs would be. */
/** `byName`: the runner's address as a name the container resolves (a relay on swarm is a DNS name), not an IP */
async function step(image: string, token: string, cmd: string[], opts: { readOnlyRoot?: boolean; byName?: boolean } = {}): Promise<Docker.Container> {
  const dir = await tmp('runner-xfer-token-');
  await writeFile(path.join(dir, 'token'), token, { mode: 0o444 });
  const c = await api.createContainer({
    Image: image,
    Cmd: ['/run/runner/runner-transfer', opts.byName ? 'runner-transfer.test' : gateway, String(server.port), '--', ...cmd],
    User: '1000:1000',
    WorkingDir: '/',
    Env: [`HOME=${CONTAINER_PATHS.home}`, `RUNNER_OUTPUT=${CONTAINER_PATHS.output}`],
    Labels: { 'dev.runner.test': 'transfer-helper' },
    HostConfig: {
      Init: true,
      CapDrop: ['ALL'],
      NetworkMode: NETWORK,
      Memory: 512 * 1024 ** 2,
      ReadonlyRootfs: opts.readOnlyRoot ?? false,
      ...(opts.byName ? { ExtraHosts: [`runner-transfer.test:${gateway}`] } : {}),
      Mounts: [
        { Type: 'bind', Source: helperFile, Target: '/run/runner/runner-transfer', ReadOnly: true },
        { Type: 'bind', Source: path.join(dir, 'token'), Target: '/run/secrets/runner-transfer', ReadOnly: true },
        ...[CONTAINER_PATHS.workspace, CONTAINER_PATHS.io].map((t) => scratchMount(t, 512 * 1024 ** 2)),
      ] as unknown as Docker.MountSettings[],
    },
  });
  containers.push(c);
  return c;
}

async function logs(c: Docker.Container): Promise<string> {
  return ((await c.logs({ stdout: true, stderr: true })) as unknown as Buffer).toString('latin1');
}

/** A workspace of every kind of entry the runner sends, and its io directory. */
async function fixture() {
  const root = await tmp('runner-xfer-ws-');
  const w = path.join(root, 'w');
  const io = path.join(root, 'io');
  await mkdir(io);
  await writeFile(path.join(io, 'input.txt'), 'for the step');
  await mkdir(path.join(w, 'src'), { recursive: true });
  await writeFile(path.join(w, 'a.txt'), 'from the runner\n');
  await writeFile(path.join(w, 'run.sh'), '#!/bin/sh\necho ran-from-the-workspace\n', { mode: 0o755 });
  await chmod(path.join(w, 'run.sh'), 0o755);
  await writeFile(path.join(w, 'private.txt'), 'mine', { mode: 0o600 });
  await chmod(path.join(w, 'private.txt'), 0o600);
  await writeFile(path.join(w, 'src/gone.txt'), 'to be removed');
  await symlink('../a.txt', path.join(w, 'src/link'));
  await mkdir(path.join(w, 'empty'));
  await chmod(path.join(w, 'src'), 0o750);
  const deep = path.join('deep', 'd'.repeat(90), 'e'.repeat(60), `${'f'.repeat(40)}.txt`);
  await mkdir(path.join(w, path.dirname(deep)), { recursive: true });
  await writeFile(path.join(w, deep), 'at the end of a long path');
  const big = randomBytes(5 * 1024 ** 2);
  await writeFile(path.join(w, 'big.bin'), big);
  await writeFile(path.join(w, 'with space é ü.txt'), 'named oddly');
  // 400 directories deep: a path of 800 bytes, and a helper that recurses
  const deeper = path.join(...Array.from({ length: 400 }, () => 'z'), 'bottom.txt');
  await mkdir(path.join(w, path.dirname(deeper)), { recursive: true });
  await writeFile(path.join(w, deeper), 'at the bottom');
  return { w, io, deep, deeper, bigHash: createHash('sha256').update(big).digest('hex') };
}

const sha = async (p: string) => createHash('sha256').update(await readFile(p)).digest('hex');
const mode = async (p: string) => (await lstat(p)).mode & 0o7777;

test('a step in a busybox image (no bash, no tar) fetches every kind of entry, runs, and its work comes back as it left it', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const staging = { w: stagingFor(f.w, 'w'), io: stagingFor(f.io, 'io') };
  const t = server.open({ w: f.w, io: f.io }, staging, owner);
  const longNew = `n/${'n'.repeat(120)}/${'m'.repeat(120)}.txt`;
  const script = [
    'set -e',
    // what it got is what was sent
    '[ "$(pwd)" = /home/agent/run-workspace ]',
    '[ ! -e /bin/bash ] && [ ! -e /bin/tar ] && [ ! -e /usr/bin/tar ]',
    '[ "$(cat src/link)" = "from the runner" ]',
    `[ "$(cat '${f.deep}')" = "at the end of a long path" ]`,
    '[ "$(cat "with space é ü.txt")" = "named oddly" ]',
    `[ "$(sha256sum big.bin)" = "${f.bigHash}  big.bin" ]`,
    'ls -ld empty src private.txt run.sh > ../.runner/modes',
    '[ "$(cat ../.runner/input.txt)" = "for the step" ]',
    // programs in the workspace run (its mount is not noexec)
    './run.sh > ran.txt',
    // its changes
    'echo "and the step" >> a.txt',
    'rm src/gone.txt',
    'printf "#!/bin/sh\\n" > new.sh && chmod 0750 new.sh',
    'ln -s "with space é ü.txt" src/odd-link',
    `mkdir -p "${path.dirname(longNew)}" && echo long > "${longNew}"`,
    'chmod 0700 src',
    'mkfifo a-fifo',
    'echo result=ok >> "$RUNNER_OUTPUT"',
    'exit 3',
  ].join('\n');
  const c = await step(images!.shell, t.token, ['sh', '-e', '-c', script]);
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  const log = await logs(c);
  assert.equal(StatusCode, 3, `the step's exit code passes through (log: ${log})`);
  const w = await t.received('w');
  assert.deepEqual(w.refused, [], 'nothing the helper sends is refused');
  await t.received('io');
  const back = staging.w;
  assert.match(log, /skipped a-fifo: a FIFO/, 'a FIFO is skipped, and said so');
  await assert.rejects(lstat(path.join(back, 'a-fifo')));
  // content
  assert.equal(await readFile(path.join(back, 'a.txt'), 'utf8'), 'from the runner\nand the step\n');
  assert.equal(await readFile(path.join(back, 'ran.txt'), 'utf8'), 'ran-from-the-workspace\n');
  assert.equal(await readFile(path.join(back, f.deep), 'utf8'), 'at the end of a long path');
  assert.equal(await readFile(path.join(back, longNew), 'utf8'), 'long\n');
  assert.equal(await readFile(path.join(back, f.deeper), 'utf8'), 'at the bottom');
  assert.equal(await readFile(path.join(back, 'with space é ü.txt'), 'utf8'), 'named oddly');
  assert.equal(await sha(path.join(back, 'big.bin')), f.bigHash);
  await assert.rejects(lstat(path.join(back, 'src/gone.txt')));
  // modes, as the step left them
  assert.equal(await mode(path.join(back, 'run.sh')), 0o755);
  assert.equal(await mode(path.join(back, 'private.txt')), 0o600);
  assert.equal(await mode(path.join(back, 'new.sh')), 0o750);
  assert.equal(await mode(path.join(back, 'src')), 0o700);
  assert.ok((await lstat(path.join(back, 'empty'))).isDirectory());
  assert.deepEqual(await readdir(path.join(back, 'empty')), []);
  // symlinks as symlinks
  assert.equal(await readlink(path.join(back, 'src/link')), '../a.txt');
  assert.equal(await readlink(path.join(back, 'src/odd-link')), 'with space é ü.txt');
  // and the modes it saw on arrival were the runner's (busybox ls -l)
  const seen = await readFile(path.join(staging.io, 'modes'), 'utf8');
  assert.match(seen, /^drwxr-xr-x .* empty$/m);
  assert.match(seen, /^drwxr-x--- .* src$/m);
  assert.match(seen, /^-rw------- .* private.txt$/m);
  assert.match(seen, /^-rwxr-xr-x .* run.sh$/m);
  assert.equal(await readFile(path.join(staging.io, 'output'), 'utf8'), 'result=ok\n');
  t.close();
});

test('SIGTERM to a busybox step\'s container reaches the step, and its work still comes back', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const staging = { w: stagingFor(f.w, 'w'), io: stagingFor(f.io, 'io') };
  const t = server.open({ w: f.w, io: f.io }, staging, owner);
  const script = `trap 'echo stopped > term.txt; exit 7' TERM\necho started > started.txt\necho started\nwhile :; do sleep 0.1; done`;
  const c = await step(images!.shell, t.token, ['sh', '-c', script]);
  await c.start();
  for (let i = 0; i < 300 && !(await logs(c)).includes('started'); i++) await new Promise((r) => setTimeout(r, 100));
  await c.kill({ signal: 'SIGTERM' });
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  assert.equal(StatusCode, 7, await logs(c));
  await t.received('w');
  assert.equal(await readFile(path.join(staging.w, 'term.txt'), 'utf8'), 'stopped\n');
  assert.equal(await readFile(path.join(staging.w, 'started.txt'), 'utf8'), 'started\n');
  t.close();
});

test('a step killed by a signal ends the container with 128 + the signal, and what it did still comes back (the runner named by a name)', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const staging = { w: stagingFor(f.w, 'w'), io: stagingFor(f.io, 'io') };
  const t = server.open({ w: f.w, io: f.io }, staging, owner);
  const c = await step(images!.shell, t.token, ['sh', '-c', 'echo before > killed.txt; kill -KILL $$'], { byName: true });
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  assert.equal(StatusCode, 137, await logs(c));
  await t.received('w');
  assert.equal(await readFile(path.join(staging.w, 'killed.txt'), 'utf8'), 'before\n');
  t.close();
});

test('a busybox step with a read-only root: its workspace is writable all the same, and comes back', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const staging = { w: stagingFor(f.w, 'w'), io: stagingFor(f.io, 'io') };
  const t = server.open({ w: f.w, io: f.io }, staging, owner);
  const c = await step(images!.shell, t.token, ['sh', '-e', '-c', 'if echo x > /not-here 2>/dev/null; then exit 9; fi; echo written > ro.txt'], { readOnlyRoot: true });
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  assert.equal(StatusCode, 0, await logs(c));
  await t.received('w');
  assert.equal(await readFile(path.join(staging.w, 'ro.txt'), 'utf8'), 'written\n');
  t.close();
});

test('an image without /bin/sh is refused before anything travels, saying why', { timeout: 60_000 }, async () => {
  const f = await fixture();
  const staging = { w: stagingFor(f.w, 'w'), io: stagingFor(f.io, 'io') };
  const t = server.open({ w: f.w, io: f.io }, staging, owner);
  const c = await step(images!.noShell, t.token, ['sh', '-e', '-c', 'echo never']);
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  const log = await logs(c);
  assert.equal(StatusCode, 127, log);
  assert.match(log, /runner transfer: this image has no \/bin\/sh \(nor sh on its PATH\), which a step's run: needs/);
  assert.doesNotMatch(log, /never/);
  // nothing was fetched: the token's one fetch of the workspace is still there to take
  const tar = await new Promise<Buffer>((resolve) => {
    const s = net.connect(server.port, '127.0.0.1', () => s.write(`GET ${t.token} w\n`));
    const got: Buffer[] = [];
    s.on('data', (b) => got.push(b));
    s.on('close', () => resolve(Buffer.concat(got)));
  });
  assert.ok(tar.includes(Buffer.from('a.txt')), 'the workspace was never fetched');
  t.close();
});

test('what it fetches is extracted strictly: no .., no absolute path, nothing through a symlink', { timeout: 60_000 }, async () => {
  // not the runner's server (which never sends such a tar): one that does
  const pack = tarStream.pack();
  pack.entry({ name: '../escape.txt', mode: 0o644 }, 'x');
  pack.entry({ name: '/abs.txt', mode: 0o644 }, 'x');
  pack.entry({ name: 'fine.txt', mode: 0o644 }, 'kept');
  pack.entry({ name: 'link', type: 'symlink', linkname: '/tmp' });
  pack.entry({ name: 'link/planted.txt', mode: 0o644 }, 'x');
  pack.finalize();
  const parts: Buffer[] = [];
  for await (const b of pack as unknown as AsyncIterable<Buffer>) parts.push(b);
  const hostile = Buffer.concat(parts);
  const fake = net.createServer((s) => {
    s.once('data', (b) => (b.toString().startsWith('GET ') ? s.end(hostile) : s.end('ok\n')));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => fake.listen(0, '0.0.0.0', r));
  try {
    const dir = await tmp('runner-xfer-token-');
    await writeFile(path.join(dir, 'token'), 'abc123', { mode: 0o444 });
    const c = await api.createContainer({
      Image: images!.shell,
      Cmd: ['/run/runner/runner-transfer', gateway, String((fake.address() as net.AddressInfo).port), '--', 'sh', '-c', 'echo ran'],
      User: '1000:1000',
      Labels: { 'dev.runner.test': 'transfer-helper' },
      HostConfig: {
        Init: true,
        CapDrop: ['ALL'],
        NetworkMode: NETWORK,
        Mounts: [
          { Type: 'bind', Source: helperFile, Target: '/run/runner/runner-transfer', ReadOnly: true },
          { Type: 'bind', Source: path.join(dir, 'token'), Target: '/run/secrets/runner-transfer', ReadOnly: true },
          { Type: 'tmpfs', Target: '/tmp', TmpfsOptions: { Mode: 0o1777 } },
          ...[CONTAINER_PATHS.workspace, CONTAINER_PATHS.io].map((t) => scratchMount(t, 64 * 1024 ** 2)),
        ] as unknown as Docker.MountSettings[],
      },
    });
    containers.push(c);
    await c.start();
    const { StatusCode } = (await c.wait()) as { StatusCode: number };
    const log = await logs(c);
    assert.equal(StatusCode, 125, log);
    assert.match(log, /skipped \.\.\/escape\.txt: a path with \.\./);
    assert.match(log, /skipped \/abs\.txt: an absolute path/);
    assert.match(log, /cannot make the directory of link\/planted\.txt/);
    assert.match(log, /could not fetch the workspace/);
    assert.doesNotMatch(log, /^ran$/m, 'the step never ran');
  } finally {
    await new Promise((r) => fake.close(r));
  }
});

test('the tar transport hands a step the helper from the gateway image; the step it prepares runs in busybox and its work lands in the worktree', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const transport = swarmTransport(api, new DockerRuntime(api), async () => gateway);
  const spec: ContainerSpec = {
    name: `runner-test-xfer-${tag}`,
    image: images!.shell,
    cmd: ['sh', '-e', '-c', 'echo "and the transport" >> a.txt; echo summary=ok >> "$RUNNER_OUTPUT"'],
    env: { HOME: CONTAINER_PATHS.home, RUNNER_OUTPUT: CONTAINER_PATHS.output },
    workingDir: CONTAINER_PATHS.workspace,
    user: '1000:1000',
    mounts: [{ source: f.w, target: CONTAINER_PATHS.workspace, readOnly: false }],
    memoryBytes: 256 * 1024 ** 2,
    cpus: 1,
    pids: 64,
    openFiles: 1024,
    fileSizeBytes: 1024 ** 3,
    readOnlyRoot: false,
    capAdd: [],
    network: 'bridge',
    labels: { 'dev.runner.test': 'transfer-helper' },
  } as unknown as ContainerSpec;
  const prepared = await transport.prepare(spec, { workspace: f.w, io: f.io, owner });
  const s = prepared.spec;
  assert.deepEqual(s.mounts, [], 'nothing of the runner\'s disk is mounted');
  assert.equal(s.cmd[0], '/run/runner/runner-transfer');
  assert.deepEqual(s.cmd.slice(3, 5), ['--', 'sh']);
  assert.deepEqual(s.scratch, [CONTAINER_PATHS.workspace, CONTAINER_PATHS.io]);
  const helper = s.files!.find((x) => x.target === '/run/runner/runner-transfer')!;
  assert.equal(helper.secret, false);
  assert.ok(Buffer.isBuffer(helper.data) && helper.data.subarray(0, 4).equals(Buffer.from('\x7fELF', 'latin1')), 'a program, as bytes');
  assert.ok(helper.data.length < 480 * 1024, `${helper.data.length} bytes: it fits a swarm config`);
  console.log(`runner-transfer: ${helper.data.length} bytes`);
  // what the swarm would do with the spec, by hand: configs and secrets as files, the scratch directories as volumes
  const dir = await tmp('runner-xfer-files-');
  const binds = await Promise.all(s.files!.map(async (x, i) => {
    const file = path.join(dir, String(i));
    await writeFile(file, x.data, { mode: x.secret ? 0o444 : 0o555 });
    return { Type: 'bind', Source: file, Target: x.secret ? `/run/secrets/${x.target}` : x.target, ReadOnly: true };
  }));
  const c = await api.createContainer({
    Image: s.image,
    Cmd: s.cmd,
    User: s.user,
    WorkingDir: s.workingDir,
    Env: Object.entries(s.env).map(([k, v]) => `${k}=${v}`),
    Labels: { 'dev.runner.test': 'transfer-helper' },
    HostConfig: { Init: true, CapDrop: ['ALL'], NetworkMode: NETWORK, Mounts: [...binds, ...s.scratch!.map((t) => scratchMount(t, s.memoryBytes))] as unknown as Docker.MountSettings[] },
  });
  containers.push(c);
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  assert.equal(StatusCode, 0, await logs(c));
  assert.equal(await prepared.finish(), undefined, 'the work came back whole');
  assert.equal(await readFile(path.join(f.w, 'a.txt'), 'utf8'), 'from the runner\nand the transport\n');
  assert.equal(await readFile(path.join(f.io, 'output'), 'utf8'), 'summary=ok\n');
});

/** Every file under `dir` with its content and modification time: what "nothing was written" is checked against. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const p = path.join(e.parentPath ?? e.path, e.name);
    const st = await lstat(p);
    out.set(path.relative(dir, p), `${st.mode}:${st.mtimeMs}:${st.isFile() ? await sha(p) : st.isSymbolicLink() ? await readlink(p) : ''}`);
  }
  return out;
}

test('a step with git on another node: its workspace is a repository of the branch down to the run\'s base; what it does to that .git never reaches the runner\'s', { timeout: 180_000 }, async () => {
  const f = await projectFixture({ remote: false });
  const git = new Git();
  const facts = await inspectProject(() => git, f.project);
  await writeFile(path.join(f.project, 'before.txt'), 'history before the base\n');
  hostGit(f.project, 'add', '-A');
  hostGit(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'the base');
  const base = await resolveBase(git, facts, undefined);
  const root = path.join(f.root, 'worktrees');
  await mkdir(root);
  const wt = await createWorktree(git, facts, root, 'run1', 'run/run1', { newFrom: base });
  // the steps before this one, committed by the runner on the run's branch
  for (const n of [1, 2]) {
    await writeFile(path.join(wt.path, 'data.txt'), `step ${n}\n`);
    await commitAll(git, wt, `step ${n}`);
  }
  const head = hostGit(wt.path, 'rev-parse', 'HEAD');
  const io = path.join(f.root, 'io');
  await mkdir(io);
  const realGit = [facts.commonDir, wt.gitDir];
  const before = await Promise.all(realGit.map(snapshot));
  const dotGitBefore = await readFile(path.join(wt.path, '.git'), 'utf8');
  const marker = path.join(f.root, 'ran-on-the-runner');
  const script = [
    'set -e',
    'git log --format=%s > ../.runner/log.txt',
    'git log --oneline > ../.runner/oneline.txt',
    'git diff "$RUNNER_BASE_SHA" > ../.runner/diff.txt',
    'git diff HEAD~1 > ../.runner/diff1.txt',
    'git rev-parse --abbrev-ref HEAD > ../.runner/branch.txt',
    'git status --porcelain > ../.runner/clean.txt',
    // its own work, and its status
    'echo "and the step" >> data.txt',
    'echo new > new.txt',
    'git status --porcelain > ../.runner/status.txt',
    // and what it plants in its .git, for the runner's git to run if it ever used that .git
    `mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-commit`,
    'chmod 0755 .git/hooks/post-commit',
    `git config core.fsmonitor "touch ${marker}"`,
    'git config core.hooksPath .git/hooks',
    `printf 'gitdir: /etc\\n' > .git/commondir`,
  ].join('\n');
  const transport = swarmTransport(api, new DockerRuntime(api), async () => gateway);
  const spec = {
    name: `runner-test-xfer-git-${tag}`,
    image: 'runner/toolchain:latest',
    cmd: ['sh', '-e', '-c', script],
    env: { HOME: CONTAINER_PATHS.home, RUNNER_OUTPUT: CONTAINER_PATHS.output, RUNNER_BASE_SHA: base },
    workingDir: CONTAINER_PATHS.workspace,
    user: '1000:1000',
    mounts: [],
    memoryBytes: 256 * 1024 ** 2,
    network: 'bridge',
    labels: { 'dev.runner.test': 'transfer-helper' },
  } as unknown as ContainerSpec;
  const notes: string[] = [];
  const prepared = await transport.prepare(spec, {
    workspace: wt.path,
    io,
    owner,
    gitCopy: (into) => makeGitCopy(git, facts, { head, base, branch: wt.branch }, into),
    note: (t) => notes.push(t),
  });
  const s = prepared.spec;
  const dir = await tmp('runner-xfer-files-');
  const binds = await Promise.all(s.files!.map(async (x, i) => {
    const file = path.join(dir, String(i));
    await writeFile(file, x.data, { mode: x.secret ? 0o444 : 0o555 });
    return { Type: 'bind', Source: file, Target: x.secret ? `/run/secrets/${x.target}` : x.target, ReadOnly: true };
  }));
  const c = await api.createContainer({
    Image: s.image,
    Cmd: s.cmd,
    User: s.user,
    WorkingDir: s.workingDir,
    Env: Object.entries(s.env).map(([k, v]) => `${k}=${v}`),
    Labels: { 'dev.runner.test': 'transfer-helper' },
    HostConfig: { Init: true, CapDrop: ['ALL'], NetworkMode: NETWORK, Mounts: [...binds, ...s.scratch!.map((t) => scratchMount(t, s.memoryBytes))] as unknown as Docker.MountSettings[] },
  });
  containers.push(c);
  await c.start();
  const { StatusCode } = (await c.wait()) as { StatusCode: number };
  assert.equal(StatusCode, 0, await logs(c));
  assert.equal(await prepared.finish(), undefined, 'the work came back whole, and the step\'s .git is not named as refused');
  assert.deepEqual(notes, []);
  // what the step's git said
  assert.deepEqual((await readFile(path.join(io, 'log.txt'), 'utf8')).trim().split('\n'), ['step 2', 'step 1', 'the base'], 'back to the base, nothing before it');
  assert.equal((await readFile(path.join(io, 'oneline.txt'), 'utf8')).trim().split('\n').length, 3);
  assert.match(await readFile(path.join(io, 'diff.txt'), 'utf8'), /^-one\n-two\n\+step 2$/m, 'git diff $RUNNER_BASE_SHA');
  assert.match(await readFile(path.join(io, 'diff1.txt'), 'utf8'), /^-step 1\n\+step 2$/m, 'git diff HEAD~1');
  assert.equal((await readFile(path.join(io, 'branch.txt'), 'utf8')).trim(), 'run/run1');
  assert.equal(await readFile(path.join(io, 'clean.txt'), 'utf8'), '', 'clean before the step changed anything');
  assert.deepEqual((await readFile(path.join(io, 'status.txt'), 'utf8')).split('\n').filter(Boolean).sort(), [' M data.txt', '?? new.txt']);
  // its work arrived; the worktree's own .git, and the repository, are as they were
  assert.equal(await readFile(path.join(wt.path, 'data.txt'), 'utf8'), 'step 2\nand the step\n');
  assert.equal(await readFile(path.join(wt.path, 'new.txt'), 'utf8'), 'new\n');
  assert.equal(await readFile(path.join(wt.path, '.git'), 'utf8'), dotGitBefore);
  assert.deepEqual(await Promise.all(realGit.map(snapshot)), before, 'nothing under the real git directories was written');
  // the runner commits the work as for a local step, and nothing the step planted runs
  const { commit } = await commitAll(git, wt, 'the step');
  assert.ok(commit);
  assert.deepEqual(hostGit(wt.path, 'show', '--name-only', '--format=', 'HEAD').split('\n').sort(), ['data.txt', 'new.txt']);
  await assert.rejects(lstat(marker), 'no hook nor fsmonitor of the step ran on the runner');
  // and its copy is gone from beside the worktree
  assert.deepEqual((await readdir(root)).filter((n) => n !== 'run1'), []);
});
