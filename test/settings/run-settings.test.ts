/** Flags and environment → one RunSettings, the same for every door. */
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { SETTINGS_FLAGS } from '../../src/settings/flags.js';
import { defaultSettings, readSettings } from '../../src/settings/run-settings.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-settings-'));
const ca = path.join(dir, 'ca.pem');
writeFileSync(ca, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n'.repeat(12));
const dockerConfig = path.join(dir, 'config.json');
writeFileSync(dockerConfig, '{"auths": {"registry.corp": {"auth": "bWU6cHc="}}}');

test('a machine that sets nothing and has no CA bundle: the local engine, runc (left to the file), bridge, no proxy, no CA, no secrets file', () => {
  assert.deepEqual(defaultSettings(), { engine: { name: 'local', registryFromFlag: false }, egress: { network: 'bridge', private: [] } });
  assert.deepEqual(readSettings({}, { RUNNER_HOST_CA_BUNDLE: 'none' }), defaultSettings());
});

test("a machine that sets nothing: its steps trust the host's own bundle; --ca-file none turns that off", () => {
  assert.deepEqual(readSettings({}, { RUNNER_HOST_CA_BUNDLE: ca }).company?.ca?.by, 'host');
  assert.equal(readSettings({}, { RUNNER_HOST_CA_BUNDLE: ca }).company?.ca?.from, ca);
  const off = readSettings({ 'ca-file': 'none' }, { RUNNER_HOST_CA_BUNDLE: ca }).company;
  assert.equal(off?.ca, undefined);
  assert.equal(off?.caOff, '--ca-file none');
});

test('the environment alone gives what the flags give', () => {
  const env = {
    RUNNER_ENGINE: 'swarm',
    RUNNER_REGISTRY: 'reg.lab:5000',
    RUNNER_ISOLATION: 'gvisor',
    RUNNER_EGRESS_NETWORK: 'corp',
    RUNNER_EGRESS_PRIVATE: '10.0.0.0/8',
    RUNNER_EGRESS_DNS: '10.0.0.2',
    RUNNER_EGRESS_PROXY: 'http://proxy.corp:3128',
    RUNNER_CA_FILE: ca,
    RUNNER_NPM_REGISTRY: 'https://npm.corp/',
    RUNNER_PIP_INDEX: 'https://pypi.corp/simple/',
    RUNNER_REGISTRY_AUTH: dockerConfig,
  };
  const flags = {
    engine: 'swarm',
    registry: 'reg.lab:5000',
    isolation: 'gvisor',
    'egress-network': 'corp',
    'egress-private': '10.0.0.0/8',
    'egress-proxy': 'http://proxy.corp:3128',
    'ca-file': ca,
    'npm-registry': 'https://npm.corp/',
    'pip-index': 'https://pypi.corp/simple/',
    'registry-auth': dockerConfig,
  };
  const fromEnv = readSettings({}, env);
  const fromFlags = readSettings(flags, { RUNNER_EGRESS_DNS: '10.0.0.2' });
  // the bundle says who named it
  assert.equal(fromEnv.company?.ca?.by, 'RUNNER_CA_FILE');
  assert.equal(fromFlags.company?.ca?.by, '--ca-file');
  fromFlags.company!.ca!.by = 'RUNNER_CA_FILE';
  assert.deepEqual({ ...fromFlags, engine: { ...fromFlags.engine, registryFromFlag: false } }, fromEnv);
  assert.equal(fromEnv.isolation, 'gvisor');
  assert.equal(fromEnv.egress.proxy?.host, 'proxy.corp');
  assert.equal(fromEnv.company?.ca?.certificates, 12);
  assert.equal(fromFlags.engine.registryFromFlag, true);
  assert.equal(fromEnv.engine.registryAuth, dockerConfig, 'the file\'s path, never its credentials');
  assert.doesNotMatch(JSON.stringify(fromEnv), /bWU6cHc=|me:pw/);
});

test('--secrets-file is kept as an absolute path (read by each door as its runs start)', () => {
  const s = readSettings({ 'secrets-file': 'some/secrets.env' }, {});
  assert.equal(s.secretsFile, path.resolve('some/secrets.env'));
});

test('warnings go to the one function given, errors name the flag or the variable', () => {
  const warned: string[] = [];
  readSettings({}, { HTTPS_PROXY: 'http://127.0.0.1:3128' }, (m) => warned.push(m));
  assert.equal(warned.length, 1);
  assert.throws(() => readSettings({ isolation: 'kata' }, {}), /--isolation takes runc or gvisor/);
  assert.throws(() => readSettings({}, { RUNNER_ENGINE: 'k8s' }), /RUNNER_ENGINE takes local, swarm or podman/);
  assert.throws(() => readSettings({}, { RUNNER_REGISTRY_AUTH: path.join(dir, 'none.json') }), /RUNNER_REGISTRY_AUTH: \S+none\.json does not exist/);
  assert.throws(() => readSettings({ 'registry-auth': ca }, {}), /--registry-auth: \S+ca\.pem is not JSON/);
  assert.throws(() => readSettings({ 'registry-auth': dir }, {}), /--registry-auth: \S+ is a directory/);
});

test('the flag table holds every setting, each a string flag', () => {
  assert.deepEqual(Object.keys(SETTINGS_FLAGS).sort(), ['ca-file', 'egress-network', 'egress-private', 'egress-proxy', 'engine', 'isolation', 'npm-registry', 'pip-index', 'registry', 'registry-auth', 'secrets-file']);
  for (const f of Object.values(SETTINGS_FLAGS)) assert.equal(f.type, 'string');
});
