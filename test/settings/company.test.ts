/** The CA bundle and mirrors, from flags else variables: read and checked before a run starts; errors say what to do. */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { readCompany } from '../../src/settings/company.js';
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
    const run = () => readCompany(c.flags ?? {}, c.env ?? {}, (m) => warned.push(m));
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
