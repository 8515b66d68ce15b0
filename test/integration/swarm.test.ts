/**
 * Steps on a real 3-node swarm on this machine (scripts/swarm-lab.sh: the
 * host's engine as manager, two engines in network namespaces as workers),
 * with --engine swarm: pipelines unchanged, the workspace by tar, nodes
 * watched. The lab is brought up for this file and taken down after it.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, type ChildProcess } from 'node:child_process';
import { lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { busyboxImages } from '../fixtures/busybox-image.js';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const LAB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../scripts/swarm-lab.sh');
const run = promisify(execFile);
const fixture = projectsForThisFile();
const SWARM = ['--engine', 'swarm'];

before(async () => {
  await run('bash', [LAB, 'up'], { env: { ...process.env, LAB_IMAGES: 'runner/base:latest runner/toolchain:latest' }, maxBuffer: 1 << 24 });
}, { timeout: 600_000 });
after(async () => {
  await run('bash', [LAB, 'down'], { maxBuffer: 1 << 24 });
}, { timeout: 300_000 });

const services = () => execFileSync('docker', ['service', 'ls', '-q', '--filter', 'label=dev.runner.run-id'], { encoding: 'utf8' }).trim();

const twoSteps = `version: 1
name: spread
project: { path: project, push: never }
defaults: { image: runner/base:latest, resources: { memory: 128m, cpus: 0.2, pids: 64 }, timeout: 2m }
steps:
  - id: write
    run: |
      echo "written on $(hostname)" > made.txt
      mkdir -p sub && ln -s ../made.txt sub/link && chmod 755 made.txt
  - id: read
    run: |
      cat made.txt >> seen.txt
      echo "read on $(hostname)" >> seen.txt
      echo "summary=read $(wc -l < seen.txt) lines" >> "$RUNNER_OUTPUT"
`;

test('six runs of a two-step pipeline at once on the swarm: every commit lands, steps ran on more than one node, no service left', { timeout: 600_000 }, async () => {
  const fs = await Promise.all(Array.from({ length: 6 }, () => fixture({ owner: 1000 })));
  const results = await Promise.all(fs.map(async (f) => execPipeline(f, await writePipeline(f, twoSteps), SWARM)));
  const nodes = new Set<string>();
  results.forEach((r, i) => {
    const f = fs[i]!;
    assert.equal(r.code, 0, r.stderr);
    const commits = commitsOn(f.project, r.json.branch, r.json.baseSha);
    assert.deepEqual(commits.map((c) => /^step\/\w+/.exec(c.subject)?.[0]).reverse(), ['step/write', 'step/read']);
    assert.match(git(f.project, 'show', `${r.json.branch}:seen.txt`), /^written on \S+\nread on \S+$/);
    assert.equal(git(f.project, 'ls-tree', r.json.branch, 'made.txt').split(/\s/)[0], '100755', 'modes travel');
    assert.equal(git(f.project, 'cat-file', '-p', `${r.json.branch}:sub/link`), '../made.txt', 'symlinks travel as symlinks');
    const rec = JSON.parse(readFileSync(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
    for (const s of rec.steps) {
      assert.ok(s.node, 'each step says on which node it ran');
      nodes.add(s.node);
    }
  });
  assert.ok(nodes.size > 1, `steps ran on ${[...nodes].join(', ')}`);
  assert.equal(services(), '', 'no job service is left');
  const shown = await runCli(['runs', 'show', results[0]!.json.runId, '--home', fs[0]!.home]);
  assert.match(shown.stdout, /on node \S+/);
});

test('a step on a worker given a secret has it byte-exact; docker service inspect, the job\'s secrets and configs, and the task\'s container on its node never show it', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const mark = 'sw4rm-s3cr3t-4711';
  const value = `${mark} one\n'single' "double" $(id) \\back\\slash %s\n\n`;
  const file = await writePipeline(f, `version: 1
name: secret
project: { path: project, push: never }
defaults: { image: runner/base:latest, resources: { memory: 128m, cpus: 0.2, pids: 64 }, timeout: 2m }
secrets: [RUNNER_TEST_SWARM]
steps:
  - id: hold
    secrets: [RUNNER_TEST_SWARM]
    run: |
      printf %s "$RUNNER_TEST_SWARM" > secret.txt
      sleep 4
`);
  // the manager's view of jobs, their secrets and configs; each worker's view of the containers it runs
  const label = `label=dev.runner.home=${f.home}`;
  const engines = [[], ...['lab-w1', 'lab-w2'].map((w) => ['-H', `unix:///run/runner-swarm-lab/${w}.sock`])];
  const views: Array<{ engine: string[]; list: string[]; inspect: string[] }> = [
    { engine: [], list: ['service', 'ls'], inspect: ['service', 'inspect'] },
    { engine: [], list: ['secret', 'ls'], inspect: ['secret', 'inspect'] },
    { engine: [], list: ['config', 'ls'], inspect: ['config', 'inspect'] },
    ...engines.map((engine) => ({ engine, list: ['ps', '-a'], inspect: ['container', 'inspect'] })),
  ];
  const seen = new Set<string>();
  const found = new Set<string>();
  let stopped = false;
  const watching = (async () => {
    while (!stopped) {
      for (const v of views) {
        const ids = (await run('docker', [...v.engine, ...v.list, '-q', '--filter', label]).catch(() => ({ stdout: '' }))).stdout.split('\n').filter(Boolean);
        if (!ids.length) continue;
        const out = (await run('docker', [...v.engine, ...v.inspect, ...ids]).catch((e: { stdout?: string }) => ({ stdout: e.stdout ?? '' }))).stdout;
        ids.forEach((id) => seen.add(`${v.inspect[0]} ${id}`));
        for (const form of [value, JSON.stringify(value).slice(1, -1), mark]) if (out.includes(form)) found.add(`${v.inspect.join(' ')} ${v.engine.join(' ')} shows it`);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  })();
  const r = await execPipeline(f, file, SWARM, { env: { RUNNER_TEST_SWARM: value } });
  stopped = true;
  await watching;
  assert.equal(r.code, 0, r.stderr);
  assert.ok([...seen].some((s) => s.startsWith('service ')) && [...seen].some((s) => s.startsWith('container ')), `the job and its task's container were inspected (${[...seen].join(', ')})`);
  assert.deepEqual([...found], []);
  assert.deepEqual(execFileSync('git', ['-c', 'safe.directory=*', '-C', f.project, 'show', `${r.json.branch}:secret.txt`]), Buffer.from(value));
  assert.equal(services(), '', 'no job service is left');
});

test('a hostile step on a worker sends its own tar back: nothing outside the worktree changes', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const outside = mkdtempSync(path.join(os.tmpdir(), 'runner-outside-'));
  try {
    // It reads its token (its to read: the step is the helper's user) and sends, before the helper does,
    // a tar of traversal, absolute, .git and through-a-symlink entries, then is killed with its helper.
    const attack = `
import io, os, socket, tarfile
tok = open('/run/secrets/runner-transfer').read().strip()
addr, port = os.environ['RUNNER_T_ADDR'], int(os.environ['RUNNER_T_PORT'])
buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode='w') as t:
    def add(name, data=b'x', **kw):
        i = tarfile.TarInfo(name); i.size = len(data)
        for k, v in kw.items(): setattr(i, k, v)
        t.addfile(i, io.BytesIO(data) if i.type == tarfile.REGTYPE else None)
    add('../../escape.txt')
    add('${outside}/abs.txt')
    add('.git/hooks/post-commit', b'#!/bin/sh\\ntouch /tmp/pwned\\n', mode=0o755)
    link = tarfile.TarInfo('out'); link.type = tarfile.SYMTYPE; link.linkname = '${outside}'; t.addfile(link)
    add('out/planted.txt')
    add('kept.txt', b'the hostile tar')
s = socket.create_connection((addr, port)); s.sendall(('PUT %s w\\n' % tok).encode() + buf.getvalue())
s.shutdown(socket.SHUT_WR)
while s.recv(4096): pass
s.close()
`;
    writeFileSync(path.join(f.project, 'attack.py'), attack);
    git(f.project, 'add', 'attack.py');
    git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@l', 'commit', '-qm', 'attack');
    // the project is its owner's: the commit made here as root must not leave root's objects in it
    execFileSync('chown', ['-R', '1000:1000', path.join(f.project, '.git')]);
    const file = await writePipeline(f, `version: 1
name: hostile
project: { path: project, push: never }
steps:
  - id: attack
    image: runner/toolchain:latest
    resources: { memory: 256m, cpus: 0.2, pids: 64 }
    timeout: 2m
    run: |
      set -- $(ps -o args= -p 1,$PPID | grep -o 'runner-transfer [0-9.]* [0-9]*' | head -n1)
      RUNNER_T_ADDR=$2 RUNNER_T_PORT=$3 python3 attack.py
      kill -9 $PPID
`);
    const before = git(f.project, 'for-each-ref');
    const r = await execPipeline(f, file, SWARM);
    assert.ok(r.json, r.stderr);
    const branch = r.json.branch;
    const step = JSON.stringify(r.json.steps.attack);
    assert.equal(git(f.project, 'ls-tree', '--name-only', branch, 'kept.txt'), 'kept.txt', `what the tar may hold is taken (step: ${step}; stderr: ${r.stderr.slice(-2000)})`);
    assert.equal(git(f.project, 'show', `${branch}:kept.txt`), 'the hostile tar');
    for (const p of [path.join(f.root, 'escape.txt'), path.join(outside, 'abs.txt'), path.join(outside, 'planted.txt'), '/tmp/pwned']) assert.throws(() => lstatSync(p), p);
    assert.throws(() => git(f.project, 'show', `${branch}:out/planted.txt`));
    assert.equal(git(f.project, 'cat-file', '-p', `${branch}:out`), outside, 'the symlink is data');
    const msg = r.json.steps.attack.message ?? '';
    assert.match(msg, /refused in what came back: .*(\.\.|absolute|\.git|symlink)/);
    assert.equal(git(f.project, 'for-each-ref').split('\n').filter((l) => !l.includes('refs/heads/run/')).join('\n'), before.split('\n').filter((l) => !l.includes('refs/heads/run/')).join('\n'));
  } finally {
    rmSync(outside, { recursive: true, force: true });
  }
});

test('a step on a worker runs git as it would locally: its log back to the base, git diff $RUNNER_BASE_SHA, a status of its own changes; what it plants in .git goes nowhere', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const marker = `/tmp/runner-git-planted-${process.pid}`;
  const file = await writePipeline(f, `version: 1
name: git-on-a-worker
project: { path: project, push: never }
defaults: { image: runner/toolchain:latest, resources: { memory: 256m, cpus: 0.2, pids: 64 }, timeout: 2m }
steps:
  - id: write
    run: echo "from the first step" > made.txt
  - id: review
    run: |
      # what it sees, kept out of the workspace until the end (a file it writes there is in its status)
      mkdir /tmp/seen
      git status --porcelain > /tmp/seen/clean.txt
      git log --format=%s > /tmp/seen/log.txt
      git diff "$RUNNER_BASE_SHA" > /tmp/seen/diff.txt
      git diff HEAD~1 --stat > /tmp/seen/diff1.txt
      git rev-parse --abbrev-ref HEAD > /tmp/seen/branch.txt
      echo more >> made.txt
      echo new > new.txt
      git status --porcelain > /tmp/seen/status.txt
      mkdir -p .git/hooks && printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-commit && chmod 0755 .git/hooks/post-commit
      git config core.fsmonitor "touch ${marker}"
      cp -r /tmp/seen seen
`);
  const r = await execPipeline(f, file, SWARM);
  assert.equal(r.code, 0, r.stderr);
  const b = r.json.branch;
  const show = (p: string) => execFileSync('git', ['-c', 'safe.directory=*', '-C', f.project, 'show', `${b}:seen/${p}`], { encoding: 'utf8' });
  assert.equal(show('clean.txt'), '', `clean at its start (step: ${JSON.stringify(r.json.steps.review)})`);
  assert.deepEqual(show('log.txt').trim().split('\n').map((l) => l.replace(/^(step\/\w+).*/, '$1')), ['step/write', 'initial'], 'back to the base');
  assert.match(show('diff.txt'), /^\+from the first step$/m);
  assert.match(show('diff1.txt'), /made\.txt/);
  assert.equal(show('branch.txt'), `${b}\n`);
  assert.equal(show('status.txt'), ' M made.txt\n?? new.txt\n', 'only what it changed');
  assert.match(r.json.steps.review.message ?? '', /^(?!.*refused)/s, 'its .git is not named as refused');
  assert.throws(() => lstatSync(marker), 'nothing it planted in its .git ran on the runner');
  assert.throws(() => git(f.project, 'show', `${b}:.git/config`));
  assert.equal(services(), '');
});

test('a busybox step runs on swarm: no bash, no tar, no /home/agent in its image; its work comes back; an image without /bin/sh is refused saying why', { timeout: 400_000 }, async () => {
  const images = await busyboxImages();
  try {
    await run('bash', [LAB, 'load', images.shell, images.noShell], { maxBuffer: 1 << 24 });
    const f = await fixture({ owner: 1000 });
    // by image ID: a job's image named so is never pulled (these are on no registry), and every node has it loaded
    const file = await writePipeline(f, `version: 1
name: busybox
project: { path: project, push: never }
defaults: { image: ${images.ids.shell}, resources: { memory: 128m, cpus: 0.2, pids: 64 }, timeout: 2m }
steps:
  - id: write
    placement: ["node.role == worker"]
    run: |
      [ ! -e /bin/bash ] && [ ! -e /bin/tar ] && [ ! -e /usr/bin/tar ]
      echo "written on $(hostname)" > made.txt
      mkdir -p sub && ln -s ../made.txt sub/link && chmod 755 made.txt
      echo "summary=busybox" >> "$RUNNER_OUTPUT"
  - id: read
    placement: ["node.role == worker"]
    run: |
      cat made.txt >> seen.txt
      echo "read on $(hostname)" >> seen.txt
`);
    const r = await execPipeline(f, file, SWARM);
    assert.equal(r.code, 0, r.stderr);
    assert.match(git(f.project, 'show', `${r.json.branch}:seen.txt`), /^written on \S+\nread on \S+$/);
    assert.equal(git(f.project, 'ls-tree', r.json.branch, 'made.txt').split(/\s/)[0], '100755', 'modes travel');
    assert.equal(git(f.project, 'cat-file', '-p', `${r.json.branch}:sub/link`), '../made.txt', 'symlinks travel as symlinks');
    const rec = JSON.parse(readFileSync(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
    for (const s of rec.steps) assert.match(s.node ?? '', /^lab-w\d$/, 'each step ran on a worker');

    const g = await fixture({ owner: 1000 });
    const none = await writePipeline(g, `version: 1
name: noshell
project: { path: project, push: never }
steps:
  - id: refused
    image: ${images.ids.noShell}
    resources: { memory: 64m, cpus: 0.2, pids: 64 }
    placement: ["node.role == worker"]
    timeout: 2m
    run: echo never > never.txt
`);
    const n = await execPipeline(g, none, SWARM);
    assert.notEqual(n.code, 0, n.stderr);
    assert.equal(n.json.steps.refused.status, 'failed', JSON.stringify(n.json.steps.refused));
    // the helper's reason is in the step's log, wherever the run keeps it
    const logs = (dir: string): string => readdirSync(dir, { withFileTypes: true }).map((e) => (e.isDirectory() ? logs(path.join(dir, e.name)) : readFileSync(path.join(dir, e.name), 'latin1'))).join('\n');
    assert.match(logs(path.join(g.home, 'runs', n.json.runId)), /this image has no \/bin\/sh \(nor sh on its PATH\), which a step's run: needs/);
    assert.throws(() => git(g.project, 'show', `${n.json.branch}:never.txt`));
    assert.equal(services(), '', 'no job service is left');
  } finally {
    await images.remove();
  }
});

test('a node without the image rejects the step: it fails with the node and the reason, no service left', { timeout: 300_000 }, async () => {
  const f = await fixture();
  // runner/gateway is on the manager only: the lab loaded base and toolchain into its workers
  const file = await writePipeline(f, `version: 1
name: noimage
project: { path: project, push: never }
steps:
  - id: somewhere
    image: runner/gateway:latest
    placement: ["node.role == worker"]
    timeout: 3m
    command: ["true"]
`);
  const r = await execPipeline(f, file, SWARM);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.somewhere.status, 'failed');
  assert.match(r.json.steps.somewhere.message, /rejected on lab-w\d: .*(does every node have image runner\/gateway:latest)/);
  assert.equal(services(), '');
});

test('network: none on a worker reaches only its relay to the runner (not the host, where network: bridge does); its work comes back', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const host = execFileSync('docker', ['info', '-f', '{{.Swarm.NodeAddr}}'], { encoding: 'utf8' }).trim();
  const seen: string[] = [];
  const listener = net.createServer((s) => {
    seen.push(s.remoteAddress ?? '?');
    s.end('hello\n');
  });
  await new Promise<void>((r) => listener.listen(0, '0.0.0.0', r));
  const port = (listener.address() as net.AddressInfo).port;
  const probe = (file: string) => `if timeout 5 bash -c 'exec 3<>/dev/tcp/${host}/${port}; cat <&3' > ${file} 2>/dev/null; then :; else echo unreached > ${file}; fi`;
  try {
    const file = await writePipeline(f, `version: 1
name: closed
project: { path: project, push: never }
defaults: { image: runner/base:latest, resources: { memory: 64m, cpus: 0.2, pids: 64 }, timeout: 2m }
steps:
  - id: closed
    network: none
    placement: ["node.role == worker"]
    run: ${JSON.stringify(probe('closed.txt'))}
  - id: open
    network: bridge
    placement: ["node.role == worker"]
    run: ${JSON.stringify(probe('open.txt'))}
`);
    const r = await execPipeline(f, file, SWARM);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git(f.project, 'show', `${r.json.branch}:closed.txt`), 'unreached', 'network: none reaches nothing but its relay');
    assert.equal(git(f.project, 'show', `${r.json.branch}:open.txt`), 'hello', 'network: bridge reaches the host (the probe works)');
    assert.equal(seen.length, 1, `connections: ${seen.join(', ')}`);
    assert.equal(services(), '');
    const left = execFileSync('docker', ['ps', '-aq', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim();
    assert.equal(left, '', 'no relay left');
    const nets = execFileSync('docker', ['network', 'ls', '-q', '--filter', `label=dev.runner.run-id=${r.json.runId}`], { encoding: 'utf8' }).trim();
    assert.equal(nets, '', 'no step network left');
  } finally {
    listener.close();
  }
});

/** The job service of a run, once its task runs: its node's hostname. */
async function runningOn(home: string): Promise<{ node: string }> {
  for (let i = 0; i < 240; i++) {
    const out = execFileSync('docker', ['service', 'ls', '--filter', `label=dev.runner.home=${home}`, '--format', '{{.Name}}'], { encoding: 'utf8' }).trim();
    if (out) {
      const ps = execFileSync('docker', ['service', 'ps', out.split('\n')[0]!, '--format', '{{.Node}} {{.CurrentState}}'], { encoding: 'utf8' }).trim();
      const m = /^(\S+) Running/m.exec(ps);
      if (m) return { node: m[1]! };
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error('no step of the run came to run');
}

const slow = (extra = '') => `version: 1
name: slow
project: { path: project, push: never }
defaults: { image: runner/base:latest, resources: { memory: 64m, cpus: 0.2, pids: 64 }, timeout: 3m }
steps:
  - id: work
    placement: ["node.role == worker"]
${extra}    run: |
      echo "started on $(hostname)" >> trail.txt
      sleep 20
      echo "finished on $(hostname)" >> trail.txt
`;

test('cancel mid-step removes its service; a runner killed mid-step is recovered: no service left', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, slow());
  let child: ChildProcess | undefined;
  const canceled = execPipeline(f, file, SWARM, { onSpawn: (c) => (child = c) });
  await runningOn(f.home);
  child!.kill('SIGINT');
  const r = await canceled;
  assert.equal(r.code, 130, r.stderr);
  assert.equal(services(), '', 'the canceled step\'s service is gone');

  const g = await fixture({ owner: 1000 });
  const killed = execPipeline(g, await writePipeline(g, slow()), SWARM, { onSpawn: (c) => (child = c) });
  await runningOn(g.home);
  child!.kill('SIGKILL');
  await killed;
  assert.notEqual(services(), '', 'a killed runner leaves its job running');
  const ls = await runCli(['runs', 'ls', '--home', g.home]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /interrupted/);
  assert.equal(services(), '', 'recovery removed it');
});

test('a worker lost mid-step: the step ends node_lost within a minute, and with a retry completes on another node', { timeout: 400_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, slow('    retries: { max: 1, backoff: 1s }\n'));
  const t0 = Date.now();
  const running = execPipeline(f, file, SWARM);
  const { node } = await runningOn(f.home);
  const lostAt = Date.now();
  // the worker's engine dies as a machine would: at once, nothing said
  execFileSync('sh', ['-c', `kill -9 "$(cat /run/runner-swarm-lab/${node}.pid)"`]);
  const r = await running;
  assert.equal(r.code, 0, r.stderr);
  const rec = JSON.parse(readFileSync(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  const [first, second] = rec.steps;
  assert.equal(first.status, 'node_lost', JSON.stringify(first));
  assert.equal(first.node, node);
  assert.match(first.message, new RegExp(`node ${node} is (down|unknown|disconnected)`));
  const noticed = (Date.parse(first.finishedAt) - lostAt) / 1000;
  console.log(`node_lost: step ended ${noticed.toFixed(1)} s after its worker's engine was killed`);
  assert.ok(noticed < 60, `noticed ${noticed}s after the kill`);
  assert.equal(second.status, 'completed');
  assert.notEqual(second.node, node, 'the retry ran elsewhere');
  // the retry's work is last; the lost attempt's, when its container outlived its engine and sent it, is before it
  assert.match(git(f.project, 'show', `${r.json.branch}:trail.txt`), /(^|\n)started on (\S+)\nfinished on \2$/);
  assert.ok(Date.now() - t0 < 300_000);
  assert.equal(services(), '');
});
