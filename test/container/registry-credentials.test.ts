/** The credentials found where the docker client finds them: its config file and real credential helpers (scripts on a PATH of the test's). */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import { HUB_KEY } from '../../src/container/registry-auth.js';
import { dockerConfigFile, readConfigFileSync, RegistryCredentials } from '../../src/container/registry-credentials.js';
import { readRegistryAuth } from '../../src/settings/registry-auth.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-regcreds-'));
const bin = path.join(dir, 'bin');
mkdirSync(bin);
const asked = path.join(dir, 'asked');
after(() => rmSync(dir, { recursive: true, force: true }));

/** a docker-credential-NAME script: records its argument and stdin, then runs `body` */
function helper(name: string, body: string): void {
  const file = path.join(bin, `docker-credential-${name}`);
  writeFileSync(file, `#!/bin/sh\nread -r url || true\nprintf '%s %s\\n' "$1" "$url" >> ${asked}\n${body}\n`);
  chmodSync(file, 0o755);
}
helper('good', `printf '{"ServerURL":"%s","Username":"robot","Secret":"s3cret"}' "$url"`);
helper('token', `printf '{"ServerURL":"%s","Username":"<token>","Secret":"idtok"}' "$url"`);
helper('empty', `echo "credentials not found in native keychain"; exit 1`);
helper('broken', `echo "the keychain is locked" >&2; exit 3`);
helper('garbled', `echo "hello"`);

const env = (configDir: string): NodeJS.ProcessEnv => ({ PATH: `${bin}:/usr/bin:/bin`, HOME: path.join(dir, 'nohome'), DOCKER_CONFIG: configDir });
function configIn(name: string, config: unknown): string {
  const d = path.join(dir, name);
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, 'config.json'), JSON.stringify(config));
  return d;
}

test('the docker client\'s file: $DOCKER_CONFIG/config.json, else ~/.docker/config.json; none there is no credentials', async () => {
  assert.equal(dockerConfigFile({ DOCKER_CONFIG: '/etc/dc', HOME: '/home/u' }), '/etc/dc/config.json');
  assert.equal(dockerConfigFile({ HOME: '/home/u' }), '/home/u/.docker/config.json');
  assert.deepEqual(await new RegistryCredentials(undefined, env(path.join(dir, 'absent'))).authFor('reg.example/x'), { registry: 'reg.example' });
});

test('auths in the file: what the engine is sent, and where it came from', async () => {
  const d = configIn('file', { auths: { 'reg.example:5000': { auth: Buffer.from('me:pw').toString('base64') } } });
  const got = await new RegistryCredentials(undefined, env(d)).authFor('reg.example:5000/team/tool:1');
  assert.deepEqual(got, { registry: 'reg.example:5000', authconfig: { username: 'me', password: 'pw', serveraddress: 'reg.example:5000' }, from: path.join(d, 'config.json') });
  assert.deepEqual(await new RegistryCredentials(undefined, env(d)).authFor('node:20'), { registry: 'docker.io' }, 'none for another registry');
});

test('a --registry-auth file stands in for the docker client\'s; one that is gone is a problem said', async () => {
  const own = configIn('own', { auths: { 'reg.example': { auth: Buffer.from('mine:pw').toString('base64') } } });
  const flagFile = path.join(configIn('flag', { auths: { 'reg.example': { username: 'flag', password: 'fpw' } } }), 'config.json');
  const got = await new RegistryCredentials(flagFile, env(own)).authFor('reg.example/x');
  assert.deepEqual(got.authconfig, { username: 'flag', password: 'fpw', serveraddress: 'reg.example' });
  assert.equal(got.from, flagFile);
  const gone = await new RegistryCredentials(path.join(dir, 'gone.json'), env(own)).authFor('reg.example/x');
  assert.equal(gone.authconfig, undefined);
  assert.match(gone.problem ?? '', /gone\.json cannot be read/);
});

test('a credential helper is run as the docker CLI runs it: `get`, the server URL on stdin, its JSON on stdout', async () => {
  writeFileSync(asked, '');
  const d = configIn('helpers', { credHelpers: { 'reg.example': 'good', 'tok.example': 'token', 'none.example': 'empty' }, credsStore: 'good' });
  const creds = new RegistryCredentials(undefined, env(d));
  const named = `the credential helper docker-credential-good (credHelpers in ${path.join(d, 'config.json')})`;
  assert.deepEqual(await creds.authFor('reg.example/x'), { registry: 'reg.example', authconfig: { username: 'robot', password: 's3cret', serveraddress: 'reg.example' }, from: named });
  assert.deepEqual((await creds.authFor('tok.example/x')).authconfig, { identitytoken: 'idtok', serveraddress: 'tok.example' });
  // the store answers for Docker Hub, asked with the key the docker CLI uses for it
  assert.deepEqual((await creds.authFor('team/tool')).authconfig, { username: 'robot', password: 's3cret', serveraddress: HUB_KEY });
  // "not found" is no credentials, not a failure
  const none = await creds.authFor('none.example/x');
  assert.equal(none.authconfig, undefined);
  assert.equal(none.problem, undefined);
  assert.deepEqual(readFileSync(asked, 'utf8').trim().split('\n'), ['get reg.example', 'get tok.example', `get ${HUB_KEY}`, 'get none.example']);
});

test('a helper that is missing, fails or answers nonsense is said plainly, never as credentials', async () => {
  const d = configIn('bad-helpers', { credHelpers: { 'broken.example': 'broken', 'garbled.example': 'garbled' }, credsStore: 'nowhere' });
  const file = path.join(d, 'config.json');
  const creds = new RegistryCredentials(undefined, env(d));
  const missing = await creds.authFor('reg.example/x');
  assert.equal(missing.authconfig, undefined);
  assert.equal(missing.problem, `the credential helper docker-credential-nowhere (credsStore in ${file}) is not on this PATH: install it, or take it out of ${file}`);
  const broken = await creds.authFor('broken.example/x');
  assert.equal(broken.problem, `the credential helper docker-credential-broken (credHelpers in ${file}) failed to answer for broken.example (the keychain is locked)`);
  const garbled = await creds.authFor('garbled.example/x');
  assert.match(garbled.problem ?? '', /docker-credential-garbled .* answered for garbled\.example with something other than its JSON/);
});

// Attacks on the private-images feature (a hostile step author, a careless user): each one that broke, fixed.

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
/** the pids still alive after up to two seconds (a process killed is reaped a moment later) */
async function stillAlive(pids: number[]): Promise<number[]> {
  for (let i = 0; i < 20 && pids.some(alive); i++) await new Promise((r) => setTimeout(r, 100));
  return pids.filter(alive);
}
const pidsIn = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number) : []);

test('a helper that hangs, even one that ignores SIGTERM and leaves a child, is killed whole after its time, and that is said', async () => {
  const pids = path.join(dir, 'stubborn.pids');
  helper('stubborn', `trap '' TERM\nsleep 1000 &\necho $$ $! > ${pids}\nwait`);
  const d = configIn('stubborn', { credHelpers: { 'hang.example': 'stubborn' } });
  const started = Date.now();
  const got = await new RegistryCredentials(undefined, env(d), 1500).authFor('hang.example/x');
  const took = Date.now() - started;
  assert.ok(took < 5000, `took ${took} ms`);
  assert.equal(got.authconfig, undefined);
  assert.equal(got.problem, `the credential helper docker-credential-stubborn (credHelpers in ${path.join(d, 'config.json')}) gave no answer for hang.example: it did not answer in 2 s and was stopped`);
  assert.equal(pidsIn(pids).length, 2);
  assert.deepEqual(await stillAlive(pidsIn(pids)), [], 'the helper and its child are gone');
});

test('a helper that answers and leaves a child holding its stdout is taken at once, and its child is ended', async () => {
  const pids = path.join(dir, 'lingering.pids');
  helper('lingering', `printf '{"Username":"robot","Secret":"s3cret"}'\nsleep 1000 &\necho $! > ${pids}`);
  const d = configIn('lingering', { credsStore: 'lingering' });
  const started = Date.now();
  const got = await new RegistryCredentials(undefined, env(d), 20_000).authFor('reg.example/x');
  assert.ok(Date.now() - started < 5000, 'not held by the child');
  assert.deepEqual(got.authconfig, { username: 'robot', password: 's3cret', serveraddress: 'reg.example' });
  assert.equal(pidsIn(pids).length, 1);
  assert.deepEqual(await stillAlive(pidsIn(pids)), [], 'its child is gone');
});

test('a helper that answers megabytes is stopped past one MiB, and that is said', async () => {
  helper('flood', 'head -c 50000000 /dev/zero | tr "\\0" x');
  const d = configIn('flood', { credsStore: 'flood' });
  const got = await new RegistryCredentials(undefined, env(d), 20_000).authFor('reg.example/x');
  assert.equal(got.authconfig, undefined);
  assert.match(got.problem ?? '', /docker-credential-flood .* gave no answer for reg\.example: it printed more than 1 MiB and was stopped$/);
});

test("a helper's secret printed to stderr, or in an answer it then fails with, is never in what is said", async () => {
  helper('loud', `printf '{"Username":"robot","Secret":"LOUDSECRET"}'\necho "debug: secret is LOUDSECRET" >&2`);
  helper('leaky', `printf '{"Username":"robot","Secret":"LEAKYSECRET"}'\nexit 1`);
  helper('leaky2', `printf '{"Username":"robot","Secret":"LEAKY2SECRET"}'\necho "could not store LEAKY2SECRET" >&2\nexit 1`);
  const d = configIn('loud', { credHelpers: { 'loud.example': 'loud', 'leaky.example': 'leaky', 'leaky2.example': 'leaky2' } });
  const creds = new RegistryCredentials(undefined, env(d));
  const loud = await creds.authFor('loud.example/x');
  assert.equal(loud.authconfig?.password, 'LOUDSECRET');
  assert.doesNotMatch(JSON.stringify({ from: loud.from, problem: loud.problem }), /LOUDSECRET/);
  for (const name of ['leaky', 'leaky2']) {
    const got = await creds.authFor(`${name}.example/x`);
    assert.equal(got.authconfig, undefined);
    assert.match(got.problem ?? '', new RegExp(`docker-credential-${name} .* failed to answer for ${name}\\.example \\(what it printed is not repeated here: it may hold the credential\\)`));
    assert.doesNotMatch(got.problem ?? '', /SECRET/);
  }
});

test('a helper name that is a path or has spaces or shell in it is refused, and nothing but docker-credential-* on PATH ever runs', async () => {
  const ran = path.join(dir, 'evil-ran');
  mkdirSync(path.join(dir, 'tmp'), { recursive: true });
  const evil = path.join(dir, 'tmp', 'evil');
  writeFileSync(evil, `#!/bin/sh\ntouch ${ran}\necho '{"Username":"u","Secret":"x"}'\n`);
  chmodSync(evil, 0o755);
  helper('ok', `touch ${ran}`);
  for (const name of ['../tmp/evil', '../../tmp/evil', evil, 'ok get; touch /tmp/pwn', 'ok $(touch x)', 'ok`id`', ' ok', 'ok ', '-ok', '.ok', 'ok\n']) {
    for (const config of [{ credsStore: name }, { credHelpers: { 'reg.example': name } }]) {
      const d = configIn('evilname', config);
      const got = await new RegistryCredentials(undefined, env(d)).authFor('reg.example/x');
      assert.equal(got.authconfig, undefined, name);
      assert.match(got.problem ?? '', /is not a helper's name \(NAME for docker-credential-NAME\)/, name);
      assert.ok(!existsSync(ran), `${JSON.stringify(name)} ran a program`);
    }
  }
});

test('a config.json that is huge, a device, a FIFO, a directory or a symlink to a secret file is refused without its text and without hanging', async () => {
  const secretFile = path.join(dir, 'shadow');
  writeFileSync(secretFile, 'root:$y$j9T$SHADOWHASH:19000:0:99999:7:::\n');
  const cases: Array<[string, (f: string) => void, RegExp]> = [
    ['huge', (f) => writeFileSync(f, `{"auths": {}, "pad": "${'x'.repeat(5 << 20)}"}`), /config\.json is 5 MiB: a docker config\.json is a few KiB, and more than 4 MiB is not read/],
    ['zero', (f) => symlinkSync('/dev/zero', f), /config\.json is not a regular file \(a device, FIFO or socket\)/],
    ['fifo', (f) => execFileSync('mkfifo', [f]), /config\.json is not a regular file \(a device, FIFO or socket\)/],
    ['dir', (f) => mkdirSync(f), /config\.json is a directory/],
    ['shadow', (f) => symlinkSync(secretFile, f), /config\.json is not JSON \(it holds something JSON does not allow\)/],
  ];
  for (const [name, make, said] of cases) {
    const d = path.join(dir, `cfg-${name}`);
    mkdirSync(d);
    const file = path.join(d, 'config.json');
    make(file);
    const started = Date.now();
    const got = await new RegistryCredentials(undefined, env(d)).authFor('reg.example/x');
    assert.ok(Date.now() - started < 3000, name);
    assert.equal(got.authconfig, undefined, name);
    assert.match(got.problem ?? '', said, name);
    assert.doesNotMatch(got.problem ?? '', /SHADOWHASH|root:|xxxx/, name);
    // --registry-auth FILE: the same, said at start
    assert.throws(() => readRegistryAuth(file, {}), (err: Error) => said.test(err.message) && !/SHADOWHASH|xxxx/.test(err.message), name);
  }
  assert.throws(() => readConfigFileSync(path.join(dir, 'nothing-here.json')), { code: 'ENOENT' });
});

test('a --registry-auth file changed, broken or removed between runs: each pull reads it as it is then', async () => {
  const d = path.join(dir, 'changing');
  mkdirSync(d);
  const file = path.join(d, 'auth.json');
  writeFileSync(file, JSON.stringify({ auths: { 'reg.example': { username: 'one', password: 'pw1' } } }));
  assert.equal(readRegistryAuth(file, {}), file);
  const creds = new RegistryCredentials(file, env(path.join(dir, 'absent')));
  assert.equal((await creds.authFor('reg.example/x')).authconfig?.username, 'one');
  writeFileSync(file, JSON.stringify({ auths: { 'other.example': { username: 'two', password: 'pw2' } } }));
  assert.deepEqual(await creds.authFor('reg.example/x'), { registry: 'reg.example' }, 'an entry taken out is no longer sent');
  assert.equal((await creds.authFor('other.example/x')).authconfig?.password, 'pw2');
  writeFileSync(file, '{"auths": {"reg.example": {"auth": "c2VjcmV0OnB3"}}');
  const broken = await creds.authFor('reg.example/x');
  assert.equal(broken.authconfig, undefined);
  assert.match(broken.problem ?? '', /auth\.json is not JSON \(it stops at character 51\)/);
  assert.doesNotMatch(broken.problem ?? '', /c2VjcmV0/);
  execFileSync('rm', [file]);
  assert.match((await creds.authFor('reg.example/x')).problem ?? '', /auth\.json cannot be read/);
});
