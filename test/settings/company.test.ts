/** The CA bundle and mirrors, from flags else variables: read and checked before a run starts; errors say what to do. */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readCompany, readHostBundle } from '../../src/settings/company.js';
import type { SettingsFlags } from '../../src/settings/flags.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-settings-company-'));
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';
const file = (name: string, text: string) => {
  const f = path.join(dir, name);
  writeFileSync(f, text);
  return f;
};
const bundle = file('bundle.pem', CERT.repeat(12));
const one = file('corp.pem', CERT);
const notes = file('notes.txt', 'hello');
const hostBundle = file('host.pem', CERT.repeat(20));
/** no host bundle: what every case below assumes unless it names one */
const NO_HOST = { RUNNER_HOST_CA_BUNDLE: 'none' };

interface Case {
  name: string;
  flags?: SettingsFlags;
  env?: NodeJS.ProcessEnv;
  check?: (got: ReturnType<typeof readCompany>) => void;
  throws?: RegExp;
  warns?: RegExp;
}

const cases: Case[] = [
  { name: 'nothing asked: nothing', check: (got) => assert.equal(got, undefined) },
  { name: '--ca-file is read and counted', flags: { 'ca-file': bundle }, check: (got) => assert.deepEqual([got?.ca?.certificates, got?.ca?.from], [12, bundle]) },
  { name: 'RUNNER_CA_FILE stands in for it', env: { RUNNER_CA_FILE: bundle }, check: (got) => assert.equal(got?.ca?.from, bundle) },
  { name: 'the flag wins over the variable', flags: { 'ca-file': bundle }, env: { RUNNER_CA_FILE: one }, check: (got) => assert.equal(got?.ca?.certificates, 12) },
  { name: 'a bundle that does not exist', flags: { 'ca-file': path.join(dir, 'nope.pem') }, throws: /--ca-file: .*nope\.pem does not exist: give a PEM bundle, like \/etc\/ssl\/certs\/ca-certificates\.crt/ },
  { name: 'a folder', flags: { 'ca-file': dir }, throws: /is not a file/ },
  { name: 'a file with no certificate, named by the variable', env: { RUNNER_CA_FILE: notes }, throws: /RUNNER_CA_FILE: .*holds no PEM certificate/ },
  { name: 'a bundle of one certificate: taken, with a warning of what the steps will trust', flags: { 'ca-file': one }, check: (got) => assert.equal(got?.ca?.certificates, 1), warns: /holds 1 certificate/ },
  {
    name: 'mirrors from flags or variables',
    flags: { 'npm-registry': 'https://npm.corp.example/' },
    env: { RUNNER_PIP_INDEX: 'http://pypi.corp.example/simple/' },
    check: (got) => assert.deepEqual(got, { npmRegistry: 'https://npm.corp.example/', pipIndex: 'http://pypi.corp.example/simple/' }),
  },
  { name: "nothing asked on a machine with a bundle: the host's own, whole, named as the host's", env: { RUNNER_HOST_CA_BUNDLE: hostBundle }, check: (got) => assert.deepEqual(got, { ca: { pem: CERT.repeat(20), certificates: 20, from: hostBundle, by: 'host' } }) },
  {
    name: "--ca-file none: no bundle for the steps, the host's kept for the gateways' diagnosis only",
    flags: { 'ca-file': 'none' },
    env: { RUNNER_HOST_CA_BUNDLE: hostBundle },
    check: (got) => assert.deepEqual(got, { caOff: '--ca-file none', hostCa: { pem: CERT.repeat(20), from: hostBundle } }),
  },
  { name: 'RUNNER_CA_FILE=none says the same, and is named so', env: { RUNNER_CA_FILE: 'none', RUNNER_HOST_CA_BUNDLE: hostBundle }, check: (got) => assert.equal(got?.caOff, 'RUNNER_CA_FILE=none') },
  { name: '--ca-file none on a machine with no bundle: nothing but the word', flags: { 'ca-file': 'none' }, check: (got) => assert.deepEqual(got, { caOff: '--ca-file none' }) },
  {
    name: "another --ca-file: it is the steps', the host's kept beside it for the diagnosis",
    flags: { 'ca-file': bundle },
    env: { RUNNER_HOST_CA_BUNDLE: hostBundle },
    check: (got) => assert.deepEqual([got?.ca?.from, got?.ca?.by, got?.hostCa?.from], [bundle, '--ca-file', hostBundle]),
  },
  { name: "--ca-file naming the host's own bundle: no second copy", flags: { 'ca-file': hostBundle }, env: { RUNNER_HOST_CA_BUNDLE: hostBundle }, check: (got) => assert.equal(got?.hostCa, undefined) },
  { name: 'RUNNER_HOST_CA_BUNDLE that does not exist is refused, named', env: { RUNNER_HOST_CA_BUNDLE: path.join(dir, 'gone.pem') }, throws: /RUNNER_HOST_CA_BUNDLE: .*gone\.pem does not exist/ },
  { name: 'a mirror that is not a URL', flags: { 'pip-index': 'pypi.corp.example' }, throws: /--pip-index \(or RUNNER_PIP_INDEX\): "pypi.corp.example" is not a URL/ },
];
if (process.getuid?.() !== 0) {
  const locked = file('locked.pem', CERT);
  chmodSync(locked, 0);
  cases.push({ name: 'a bundle this user cannot read', flags: { 'ca-file': locked }, throws: /cannot be read by this user/ });
}

for (const c of cases) {
  test(`company network: ${c.name}`, () => {
    const warned: string[] = [];
    const run = () => readCompany(c.flags ?? {}, { ...NO_HOST, ...c.env }, (m) => warned.push(m));
    if (c.throws) {
      assert.throws(run, c.throws);
      return;
    }
    c.check!(run());
    if (c.warns) {
      assert.equal(warned.length, 1);
      assert.match(warned[0]!, c.warns);
    } else assert.deepEqual(warned, []);
  });
}

test("the host's bundle is the first of the usual places that exists; one that is no bundle is left out with a warning", () => {
  const warned: string[] = [];
  assert.equal(readHostBundle({}, (m) => warned.push(m), [path.join(dir, 'nope.pem'), hostBundle])?.from, hostBundle);
  assert.equal(readHostBundle({}, (m) => warned.push(m), [path.join(dir, 'nope.pem')]), undefined);
  assert.equal(warned.length, 0);
  assert.equal(readHostBundle({}, (m) => warned.push(m), [notes]), undefined);
  assert.equal(warned.length, 1);
  assert.match(warned[0]!, /this machine's CA bundle: .*notes\.txt holds no PEM certificate.*the steps trust their images' own roots/);
  // named: it is the one, whatever the usual places hold
  assert.equal(readHostBundle({ RUNNER_HOST_CA_BUNDLE: bundle }, () => undefined, [hostBundle])?.from, bundle);
  assert.equal(readHostBundle({ RUNNER_HOST_CA_BUNDLE: 'none' }, () => undefined, [hostBundle]), undefined);
});
