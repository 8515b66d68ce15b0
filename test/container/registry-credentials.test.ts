/** The credentials found where the docker client finds them: its config file and real credential helpers (scripts on a PATH of the test's). */
import assert from 'node:assert/strict';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { HUB_KEY } from '../../src/container/registry-auth.js';
import { dockerConfigFile, RegistryCredentials } from '../../src/container/registry-credentials.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-regcreds-'));
const bin = path.join(dir, 'bin');
mkdirSync(bin);
const asked = path.join(dir, 'asked');

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
