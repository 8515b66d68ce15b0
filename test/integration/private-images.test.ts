/**
 * A step's image in a private registry of the test's own (Debian's
 * docker-registry, TLS and htpasswd auth, on 127.0.0.1: test/fixtures/private-registry.ts),
 * pulled by `runner exec` with the credentials the docker client would use:
 * a config.json's auths, its credential helper (a script of the test's on the
 * runner's PATH), or --registry-auth FILE. Without them, or with wrong ones,
 * the run is refused naming the registry and how to log in. The same through
 * `runner serve`'s API (--registry-auth) and `runner mcp`'s start_run
 * (RUNNER_REGISTRY_AUTH); and `runner images push`'s code pushes there with
 * them. The step itself never sees them: it searches its env and its whole
 * filesystem for the password, and the run's records and output are searched too.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import Docker from 'dockerode';
import { pinnedOwnImage, pushOwnImages } from '../../src/container/registry.js';
import { RegistryCredentials } from '../../src/container/registry-credentials.js';
import { busyboxImages, type BusyboxImages } from '../fixtures/busybox-image.js';
import { startPrivateRegistry, type PrivateRegistry } from '../fixtures/private-registry.js';
import { CLI, execPipeline, git, projectsForThisFile, serveFolder, until, writePipeline, type CliResult } from '../fixtures/project.js';

const run = promisify(execFile);
const fixture = projectsForThisFile();
const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-private-images-'));
const bin = path.join(dir, 'bin');
mkdirSync(bin);

let registry: PrivateRegistry;
let busybox: BusyboxImages;
/** the step's image, under the registry's name: never on this engine when a run starts */
let ref: string;
/** the busybox image with grep, find, env and tr, which the private image is */
let probeImage: string;

before(async () => {
  registry = await startPrivateRegistry();
  busybox = await busyboxImages();
  probeImage = busybox.shell.replace('xfer-busybox', 'private-probe');
  const ctx = path.join(dir, 'ctx');
  mkdirSync(ctx);
  writeFileSync(path.join(ctx, 'Dockerfile'), `FROM ${busybox.shell}\nRUN for t in grep find env tr; do ln -s sh /bin/$t; done\n`);
  await run('docker', ['build', '-q', '--label', 'dev.runner.test=private-images', '-t', probeImage, ctx]);
  ref = await registry.push(probeImage, `runner-test/private:${probeImage.split(':')[1]}`);
});

after(async () => {
  await run('docker', ['rmi', '-f', ref, probeImage]).catch(() => undefined);
  await busybox?.remove();
  await registry?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

/** a DOCKER_CONFIG directory holding `config` */
function dockerConfig(name: string, config: unknown): string {
  const d = path.join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'config.json'), JSON.stringify(config));
  return d;
}

/**
 * A step in the private image that looks for the password (and the base64 of user:password) in its env, its
 * processes' environments and every file it can read, and writes what it found to found.txt. The pipeline file
 * holds each only cut in two, so that finding it whole anywhere (the records too) is a leak. A control string it
 * writes itself must be found, or the search proved nothing.
 */
function pipeline(project = 'project'): string {
  const cut = (s: string) => [s.slice(0, 6), s.slice(6)];
  const [p1, p2] = cut(registry.password);
  const [a1, a2] = cut(b64(`${registry.user}:${registry.password}`));
  return `version: 1
name: private
project: { path: ${project}, push: never }
defaults: { resources: { memory: 128m, cpus: 0.5, pids: 64 }, timeout: 2m }
steps:
  - id: probe
    image: ${ref}
    run: |
      pw="${p1}""${p2}"; auth="${a1}""${a2}"
      echo "control-${p1}" > control.txt
      files() { find / -path /proc -prune -o -path /sys -prune -o -path /dev -prune -o -type f -print 2>/dev/null; }
      count() {
        n=0
        env | grep -qF "$1" && n=$((n + 1))
        for e in /proc/[0-9]*/environ; do tr '\\000' '\\n' < "$e" 2>/dev/null | grep -qF "$1" && n=$((n + 1)); done
        echo $((n + $(files | while read -r f; do grep -qsF "$1" "$f" && echo "$f"; done | wc -l)))
      }
      for s in "$pw" "$auth" "control-${p1}"; do count "$s" >> found.txt; done
      echo "files=$(files | wc -l)" >> found.txt
      rm control.txt
`;
}

/** every file under `root`, read (the run's records, logs, events) */
function allText(root: string): string {
  let out = '';
  const walk = (d: string) => {
    for (const e of readdirSync(d)) {
      const p = path.join(d, e);
      const st = statSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      if (st.isDirectory()) walk(p);
      else if (st.isFile()) out += readFileSync(p).toString('latin1');
    }
  };
  walk(root);
  return out;
}

async function removeLocal(): Promise<void> {
  await run('docker', ['rmi', ref]).catch(() => undefined);
  const { stdout } = await run('docker', ['images', '-q', ref]);
  assert.equal(stdout.trim(), '', `${ref} is not on this engine before the run`);
}

async function exec(env: NodeJS.ProcessEnv, extra: string[] = []): Promise<{ r: CliResult; f: Awaited<ReturnType<typeof fixture>> }> {
  await removeLocal();
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, pipeline());
  const r = await execPipeline(f, file, extra, { env });
  return { r, f };
}

/** the run pulled the image and ran; the step found neither the password nor the auth; nothing of the run holds them */
function assertRanUnseen(r: CliResult, f: { project: string; home: string }): void {
  assert.equal(r.code, 0, `${r.stderr}\n${registry.log().slice(-3000)}`);
  assertUnseen(r.json.branch, r.stdout + r.stderr, f);
}

function assertUnseen(branch: string, output: string, f: { project: string; home: string }): void {
  const found = git(f.project, 'show', `${branch}:found.txt`).split('\n');
  assert.deepEqual(found.slice(0, 2), ['0', '0'], 'the step found the password and the auth nowhere');
  assert.ok(Number(found[2]) > 0, `the step's search finds what it wrote itself (${found.join(' ')})`);
  assert.ok(Number(/^files=(\d+)/.exec(found[3] ?? '')?.[1]) >= 4, `the step searched its filesystem (${found.join(' ')})`);
  const auth = b64(`${registry.user}:${registry.password}`);
  for (const [where, text] of [['output', output], ['run records', allText(f.home)]] as const) {
    assert.ok(!text.includes(registry.password), `the password is not in the ${where}`);
    assert.ok(!text.includes(auth), `the auth is not in the ${where}`);
  }
}

test('without credentials the run is refused, naming the registry and how to log in; with wrong ones, saying whose were refused', { timeout: 300_000 }, async (t) => {
  const empty = dockerConfig('empty', {});
  const { r } = await exec({ DOCKER_CONFIG: empty });
  assert.notEqual(r.code, 0);
  const said = `${r.stderr}\n${JSON.stringify(r.json ?? {})}`;
  assert.match(said, new RegExp(`the registry ${registry.host.replace(/\./g, '\\.')} wants credentials to pull ${ref.replace(/\./g, '\\.')}, and the runner has none for it`));
  assert.match(said, new RegExp(`log in with \`docker login ${registry.host.replace(/\./g, '\\.')}\`.*--registry-auth FILE`));
  assert.doesNotMatch(said, /\(HTTP code \d+\)/, 'not dockerode\'s words');
  t.diagnostic(`without credentials: ${r.json?.error?.message ?? r.stderr}`);

  const wrong = dockerConfig('wrong', { auths: { [registry.host]: { auth: b64(`${registry.user}:not-the-password`) } } });
  const w = (await exec({ DOCKER_CONFIG: wrong })).r;
  assert.notEqual(w.code, 0);
  t.diagnostic(`wrong credentials: ${w.json?.error?.message ?? w.stderr}`);
  assert.match(`${w.stderr}\n${JSON.stringify(w.json ?? {})}`, new RegExp(`the registry ${registry.host.replace(/\./g, '\\.')} refused the credentials for it from ${path.join(wrong, 'config.json')} .*log in again with \`docker login`));
});

test("with the docker client's config.json (auths), the image is pulled and the step never sees the credentials", { timeout: 300_000 }, async () => {
  const d = dockerConfig('auths', { auths: { [registry.host]: { auth: b64(`${registry.user}:${registry.password}`) } } });
  const { r, f } = await exec({ DOCKER_CONFIG: d });
  assertRanUnseen(r, f);
});

test('with a credential helper (credHelpers), asked as the docker CLI asks it', { timeout: 300_000 }, async () => {
  const asked = path.join(dir, 'helper-asked');
  const secret = path.join(dir, 'helper-secret');
  writeFileSync(secret, registry.password);
  const helper = path.join(bin, 'docker-credential-runnertest');
  writeFileSync(helper, `#!/bin/sh\nread -r url || true\necho "$1 $url" >> ${asked}\nprintf '{"ServerURL":"%s","Username":"${registry.user}","Secret":"%s"}' "$url" "$(cat ${secret})"\n`);
  chmodSync(helper, 0o755);
  const d = dockerConfig('helper', { credHelpers: { [registry.host]: 'runnertest' } });
  const { r, f } = await exec({ DOCKER_CONFIG: d, PATH: `${bin}:${process.env.PATH}` });
  assertRanUnseen(r, f);
  assert.equal(readFileSync(asked, 'utf8'), `get ${registry.host}\n`);

  // a helper the config names that is not on the PATH: said, with the pull's refusal
  const gone = dockerConfig('gone', { credHelpers: { [registry.host]: 'runnertest-gone' } });
  const g = (await exec({ DOCKER_CONFIG: gone, PATH: `${bin}:${process.env.PATH}` })).r;
  assert.notEqual(g.code, 0);
  assert.match(`${g.stderr}\n${JSON.stringify(g.json ?? {})}`, /none could be had: the credential helper docker-credential-runnertest-gone \(credHelpers in \S+config\.json\) is not on this PATH/);
});

test('with --registry-auth FILE in place of the docker client\'s config', { timeout: 300_000 }, async () => {
  const file = path.join(dockerConfig('flag', { auths: { [`https://${registry.host}`]: { username: registry.user, password: registry.password } } }), 'config.json');
  const empty = dockerConfig('empty-for-flag', {});
  const { r, f } = await exec({ DOCKER_CONFIG: empty }, ['--registry-auth', file]);
  assertRanUnseen(r, f);

  // a file without this registry: the docker client's own config is not read instead, and the fix is said for the file
  const other = path.join(dockerConfig('flag-other', { auths: { 'registry.other.example': { auth: b64('a:b') } } }), 'config.json');
  const withClient = dockerConfig('client-has-it', { auths: { [registry.host]: { auth: b64(`${registry.user}:${registry.password}`) } } });
  const o = (await exec({ DOCKER_CONFIG: withClient }, ['--registry-auth', other])).r;
  assert.notEqual(o.code, 0);
  assert.match(`${o.stderr}\n${JSON.stringify(o.json ?? {})}`, new RegExp(`give ${registry.host.replace(/\./g, '\\.')}'s credentials in ${other} \\(--registry-auth`));
});

test('runner serve --registry-auth FILE: a run started through its API pulls with it too', { timeout: 300_000 }, async () => {
  await removeLocal();
  const file = path.join(dockerConfig('serve-flag', { auths: { [registry.host]: { auth: b64(`${registry.user}:${registry.password}`) } } }), 'config.json');
  const f = await fixture({ owner: 1000 });
  const s = await serveFolder(f, { 'private.yaml': pipeline(f.project) }, '127.0.0.1:0', { env: { DOCKER_CONFIG: dockerConfig('serve-empty', {}) }, args: ['--registry-auth', file] });
  try {
    const started = await fetch(`${s.base}/api/pipelines/private/runs`, { method: 'POST' });
    assert.equal(started.status, 202, await started.clone().text());
    const { runId } = (await started.json()) as { runId: string };
    const done = await until(
      'the run to end',
      async () => {
        const v = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as { status: string; error?: unknown };
        return ['succeeded', 'failed', 'error', 'canceled'].includes(v.status) ? v : undefined;
      },
      180_000,
    );
    assert.equal(done.status, 'succeeded', `${JSON.stringify(done)}\n${s.out()}`);
    assertUnseen(`run/${runId}`, s.out(), f);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test("runner images push and the swarm's digest lookup go to the registry with the docker client's credentials", { timeout: 300_000 }, async () => {
  // one of the runner's own names on a tag of this test's (the busybox image), so nothing of the real runner/base moves
  const own = `runner/base:regauth-${probeImage.split(':')[1]}`;
  const docker = new Docker();
  await docker.getImage(probeImage).tag({ repo: 'runner/base', tag: own.split(':')[1] });
  try {
    const none = new RegistryCredentials(undefined, { ...process.env, DOCKER_CONFIG: dockerConfig('push-none', {}) });
    await assert.rejects(pushOwnImages(registry.host, [own], () => undefined, docker, none), (err: Error) => {
      assert.match(err.message, new RegExp(`pushing ${own} to ${registry.host.replace(/\./g, '\\.')}/runner/base:\\S+ failed: the registry at \\S+ wants credentials, or refused the ones it was given: log in with \`docker login ${registry.host.replace(/\./g, '\\.')}\``), err.message);
      return true;
    });
    const creds = new RegistryCredentials(undefined, { ...process.env, DOCKER_CONFIG: dockerConfig('push-auths', { auths: { [registry.host]: { auth: b64(`${registry.user}:${registry.password}`) } } }) });
    const [pushed] = await pushOwnImages(registry.host, [own], () => undefined, docker, creds);
    assert.match(pushed!.digest, /^sha256:[0-9a-f]{64}$/);
    assert.equal(await pinnedOwnImage(docker, registry.host, own, creds), pushed!.pinned, 'the registry was asked for the digest with the credentials');
  } finally {
    await run('docker', ['rmi', own, `${registry.host}/${own}`]).catch(() => undefined);
  }
});

test('runner mcp with RUNNER_REGISTRY_AUTH: a run started by its start_run tool pulls with it', { timeout: 300_000 }, async () => {
  await removeLocal();
  const file = path.join(dockerConfig('mcp-env', { auths: { [registry.host]: { auth: b64(`${registry.user}:${registry.password}`) } } }), 'config.json');
  const f = await fixture({ owner: 1000 });
  const pipes = path.join(f.root, 'pipelines');
  mkdirSync(pipes);
  writeFileSync(path.join(pipes, 'private.yaml'), pipeline(f.project));
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', f.home, '--pipelines', pipes],
    env: { ...(process.env as Record<string, string>), DOCKER_CONFIG: dockerConfig('mcp-empty', {}), RUNNER_REGISTRY_AUTH: file },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b: Buffer) => (stderr += b.toString()));
  const c = new Client({ name: 'private-images', version: '1' });
  await c.connect(transport);
  try {
    const call = async (name: string, args: Record<string, unknown>) => {
      const r = (await c.callTool({ name, arguments: args }, undefined, { timeout: 240_000 })) as { isError?: boolean; content: Array<{ text: string }> };
      assert.ok(!r.isError, `${name}: ${r.content[0]?.text}\n${stderr.slice(-3000)}`);
      return JSON.parse(r.content[0]!.text);
    };
    const { runId } = await call('start_run', { pipeline: 'private' });
    const end = await call('wait_for_run', { run_id: runId, timeout_seconds: 200 });
    assert.equal(end.status, 'succeeded', `${JSON.stringify(end)}\n${stderr.slice(-3000)}`);
    assertUnseen(`run/${runId}`, stderr, f);
  } finally {
    await c.close();
  }
});
