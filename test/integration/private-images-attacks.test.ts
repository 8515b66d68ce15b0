/**
 * The private-images feature attacked, as a hostile step author and a careless
 * user would, through `runner exec` against a real registry (Debian's
 * docker-registry, TLS and htpasswd: test/fixtures/private-registry.ts) and a
 * second one of the test's own on loopback that records every Authorization
 * header it is sent. Credentials for the first must never go to the second,
 * whatever the image is named; a credential helper that fails with its answer
 * on stdout, or prints the secret to stderr, and a config.json that is a
 * symlink to a file holding the password, must not put the password in the
 * runner's output, the step's log, the run's records or `runner runs show --json`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';
import { DockerRuntime } from '../../src/container/local/docker.js';
import { RegistryCredentials } from '../../src/container/registry-credentials.js';
import { busyboxImages, type BusyboxImages } from '../fixtures/busybox-image.js';
import { startPrivateRegistry, type PrivateRegistry } from '../fixtures/private-registry.js';
import { execPipeline, projectsForThisFile, runCli, writePipeline, type CliResult } from '../fixtures/project.js';

const run = promisify(execFile);
const fixture = projectsForThisFile();
const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-private-attacks-'));
const bin = path.join(dir, 'bin');
mkdirSync(bin);

let registry: PrivateRegistry;
let busybox: BusyboxImages;
/** the step's image on the private registry */
let ref: string;
/** the second registry: answers every request with a Basic challenge, and records the Authorization headers it gets */
let other: { host: string; port: number; seen: string[]; server: http.Server };

before(async () => {
  registry = await startPrivateRegistry();
  busybox = await busyboxImages();
  const local = busybox.shell.replace('xfer-busybox', 'private-attack');
  await run('docker', ['tag', busybox.shell, local]);
  ref = await registry.push(local, `runner-test/attack:${local.split(':')[1]}`);
  await run('docker', ['rmi', local]).catch(() => undefined);
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? '-'}`);
    res.writeHead(401, { 'WWW-Authenticate': 'Basic realm="other"', 'Docker-Distribution-API-Version': 'registry/2.0', 'Content-Type': 'application/json' });
    res.end('{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  other = { host: `127.0.0.1:${port}`, port, seen, server };
});

after(async () => {
  await run('docker', ['rmi', '-f', ref]).catch(() => undefined);
  await busybox?.remove();
  await registry?.stop();
  await new Promise((r) => other?.server.close(r));
  rmSync(dir, { recursive: true, force: true });
});

const b64 = (s: string) => Buffer.from(s).toString('base64');

function dockerConfig(name: string, config: unknown): string {
  const d = path.join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'config.json'), JSON.stringify(config));
  return d;
}

function allText(root: string): string {
  let out = '';
  if (!existsSync(root)) return out;
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

/** `runner exec` of a one-step pipeline in `image`, the image first taken off this engine */
async function exec(image: string, env: NodeJS.ProcessEnv): Promise<{ r: CliResult; f: Awaited<ReturnType<typeof fixture>> }> {
  await run('docker', ['rmi', image]).catch(() => undefined);
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(
    f,
    `version: 1
name: attack
project: { path: project, push: never }
defaults: { resources: { memory: 128m, cpus: 0.5, pids: 64 }, timeout: 2m }
steps:
  - id: s
    image: "${image}"
    run: echo ran > ran.txt
`,
  );
  const r = await execPipeline(f, file, [], { env: { PATH: `${bin}:${process.env.PATH}`, ...env } });
  return { r, f };
}

/** the password, and the base64 of user:password, are nowhere: output, records (logs, events), `runs show --json` */
async function assertNowhere(r: CliResult, f: { home: string }): Promise<void> {
  // a pull refused stops the run before it has a record (runId null); one that ran is shown
  const runId = r.json?.runId as string | null | undefined;
  const shown: string[] = [];
  if (runId) {
    const show = await runCli(['runs', 'show', runId, '--json', '--home', f.home]);
    assert.equal(show.code, 0, show.stderr);
    shown.push(show.stdout);
  } else assert.equal(r.json?.error?.code, 'image_missing', r.stdout);
  const auth = b64(`${registry.user}:${registry.password}`);
  for (const [where, text] of [['output', r.stdout + r.stderr], ['run records', allText(f.home)], ['runs show --json', shown.join('\n')]] as const) {
    assert.ok(!text.includes(registry.password), `the password is not in the ${where}: ${text.slice(0, 2000)}`);
    assert.ok(!text.includes(auth), `the auth is not in the ${where}`);
  }
}

test("credentials for one registry never go to another, however the image is named", { timeout: 300_000 }, async (t) => {
  // the first registry's credentials, under each of the keys the docker CLI writes or reads for it
  const auth = { auth: b64(`${registry.user}:${registry.password}`) };
  const d = dockerConfig('a-only', { auths: { [registry.host]: auth, [`https://${registry.host}/v1/`]: auth, [`http://${registry.host}`]: auth } });
  const [ip, port] = registry.host.split(':');
  const images = [
    `${other.host}/runner-test/attack:1`,
    `${other.host}/${ip}/${port}/attack:1`,
    `localhost:${other.port}/runner-test/attack:1`,
    `${other.host}/runner-test/attack:1@sha256:${'0'.repeat(64)}`,
  ];
  for (const image of images) {
    other.seen.length = 0;
    const { r, f } = await exec(image, { DOCKER_CONFIG: d });
    assert.notEqual(r.code, 0, image);
    t.diagnostic(`${image}: ${other.seen.length} requests to the other registry; ${(r.json?.error?.message ?? r.stderr).slice(0, 300)}`);
    assert.ok(other.seen.length > 0, `the engine asked the other registry for ${image} (else this proves nothing): ${r.stderr}`);
    for (const s of other.seen) assert.match(s, / -$/, `no Authorization went to ${other.host} for ${image}: ${s}`);
    await assertNowhere(r, f);
  }
  // the same credentials still reach their own registry (else the above proves nothing)
  const { r } = await exec(ref, { DOCKER_CONFIG: d });
  assert.equal(r.code, 0, r.stderr);
});

test("a credential helper that fails with its answer on stdout, or prints the secret on stderr: the password reaches no log or record", { timeout: 300_000 }, async () => {
  const secret = path.join(dir, 'secret');
  writeFileSync(secret, registry.password);
  const answer = `printf '{"ServerURL":"%s","Username":"${registry.user}","Secret":"%s"}' "$url" "$(cat ${secret})"`;
  for (const [name, body] of [
    ['attackfails', `${answer}\nexit 1`],
    ['attackfails2', `${answer}\necho "could not refresh $(cat ${secret})" >&2\nexit 1`],
  ] as const) {
    const helper = path.join(bin, `docker-credential-${name}`);
    writeFileSync(helper, `#!/bin/sh\nread -r url || true\n${body}\n`);
    chmodSync(helper, 0o755);
    const { r, f } = await exec(ref, { DOCKER_CONFIG: dockerConfig(name, { credHelpers: { [registry.host]: name } }) });
    assert.notEqual(r.code, 0);
    assert.match(`${r.stderr}\n${JSON.stringify(r.json ?? {})}`, new RegExp(`docker-credential-${name} \\(credHelpers in \\S+\\) failed to answer for ${registry.host.replace(/\./g, '\\.')} \\(what it printed is not repeated here: it may hold the credential\\)`));
    await assertNowhere(r, f);
  }
  // one that answers, and prints the secret on stderr too: the pull works, and the stderr goes nowhere
  const loud = path.join(bin, 'docker-credential-attackloud');
  writeFileSync(loud, `#!/bin/sh\nread -r url || true\necho "debug: $(cat ${secret})" >&2\n${answer}\n`);
  chmodSync(loud, 0o755);
  const { r, f } = await exec(ref, { DOCKER_CONFIG: dockerConfig('loud', { credHelpers: { [registry.host]: 'attackloud' } }) });
  assert.equal(r.code, 0, r.stderr);
  await assertNowhere(r, f);
});

test('a config.json that is a symlink to a file holding the password: refused without its text', { timeout: 300_000 }, async () => {
  const d = path.join(dir, 'symlinked');
  mkdirSync(d);
  const held = path.join(dir, 'notes.txt');
  writeFileSync(held, `${registry.user}:${registry.password}\n`);
  symlinkSync(held, path.join(d, 'config.json'));
  const { r, f } = await exec(ref, { DOCKER_CONFIG: d });
  assert.notEqual(r.code, 0);
  assert.match(`${r.stderr}\n${JSON.stringify(r.json ?? {})}`, /config\.json is not JSON \(it holds something JSON does not allow\)/);
  await assertNowhere(r, f);
});

test('an image name the engine takes as no reference is refused before any credential is looked up: no helper runs', { timeout: 120_000 }, async () => {
  const asked = path.join(dir, 'names-asked');
  writeFileSync(asked, '');
  const helper = path.join(bin, 'docker-credential-attacknames');
  writeFileSync(helper, `#!/bin/sh\nread -r url || true\necho "$url" >> ${asked}\nprintf '{"Username":"${registry.user}","Secret":"%s"}' "${registry.password}"\n`);
  chmodSync(helper, 0o755);
  const d = dockerConfig('names', { credsStore: 'attacknames' });
  const engine = new DockerRuntime(undefined, 'bridge', new RegistryCredentials(undefined, { ...process.env, PATH: `${bin}:${process.env.PATH}`, DOCKER_CONFIG: d }));
  const names = [`${registry.host}@evil`, `${registry.host}/runner-test/attack:1\nevil.example/x`, `${registry.host}/Runner-Test/attack:1`, `${registry.host}/runner-test/attack:1 evil`];
  // (not `https://HOST/...`: the engine answers its inspect with a 301, and docker-modem follows that to http://images/..., off loopback)
  for (const image of names) {
    const said: string[] = [];
    await assert.rejects(engine.ensureImage(image, (p) => said.push(p.status)), /docker failed inspecting image .*(invalid reference format|unescaped characters)/s, JSON.stringify(image));
    assert.deepEqual(said, [], `nothing was pulled for ${JSON.stringify(image)}`);
  }
  assert.equal(readFileSync(asked, 'utf8'), '', 'the helper was never asked');
});

test('a credential helper that hangs: the pull waits its bound (30 s), says so plainly, and goes on without', { timeout: 120_000 }, async () => {
  const pids = path.join(dir, 'hang.pids');
  const helper = path.join(bin, 'docker-credential-attackhang');
  writeFileSync(helper, `#!/bin/sh\ntrap '' TERM\nsleep 1000 &\necho $$ $! > ${pids}\nwait\n`);
  chmodSync(helper, 0o755);
  const d = dockerConfig('hang', { credHelpers: { [registry.host]: 'attackhang' } });
  const engine = new DockerRuntime(undefined, 'bridge', new RegistryCredentials(undefined, { ...process.env, PATH: `${bin}:${process.env.PATH}`, DOCKER_CONFIG: d }));
  await run('docker', ['rmi', ref]).catch(() => undefined);
  const said: string[] = [];
  const started = Date.now();
  await assert.rejects(engine.ensureImage(ref, (p) => said.push(p.status)), (err: Error) => {
    assert.match(err.message, new RegExp(`none could be had: the credential helper docker-credential-attackhang \\(credHelpers in \\S+\\) gave no answer for ${registry.host.replace(/\./g, '\\.')}: it did not answer in 30 s and was stopped`), err.message);
    return true;
  });
  const took = Date.now() - started;
  assert.ok(took >= 29_000 && took < 60_000, `took ${took} ms`);
  assert.ok(said.some((l) => /no credentials for \S+: the credential helper docker-credential-attackhang .* did not answer in 30 s and was stopped; asking without/.test(l)), said.join('\n'));
  const left = readFileSync(pids, 'utf8').trim().split(/\s+/).map(Number);
  for (let i = 0; i < 20 && left.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(left.filter(alive), [], 'the helper and its child are gone');
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
