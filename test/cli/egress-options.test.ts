/** The flags and variables of a company's network, read and checked before a run starts: errors say what to do. */
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { egressOptions } from '../../src/cli/egress-options.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-egress-options-'));
const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

test('--ca-file, else RUNNER_CA_FILE: read and checked, with what to do when it is wrong', () => {
  const good = path.join(dir, 'bundle.pem');
  writeFileSync(good, CERT.repeat(12));
  const o = egressOptions({ 'ca-file': good }, undefined, {});
  assert.equal(o.company?.ca?.certificates, 12);
  assert.equal(egressOptions({}, undefined, { RUNNER_CA_FILE: good }).company?.ca?.from, good);
  assert.throws(() => egressOptions({ 'ca-file': path.join(dir, 'nope.pem') }, undefined, {}), /--ca-file: .*nope\.pem does not exist: give a PEM bundle, like \/etc\/ssl\/certs\/ca-certificates\.crt/);
  assert.throws(() => egressOptions({ 'ca-file': dir }, undefined, {}), /is not a file/);
  const text = path.join(dir, 'notes.txt');
  writeFileSync(text, 'hello');
  assert.throws(() => egressOptions({}, undefined, { RUNNER_CA_FILE: text }), /RUNNER_CA_FILE: .*holds no PEM certificate/);
  if (process.getuid?.() !== 0) {
    const locked = path.join(dir, 'locked.pem');
    writeFileSync(locked, CERT);
    chmodSync(locked, 0);
    assert.throws(() => egressOptions({ 'ca-file': locked }, undefined, {}), /cannot be read by this user/);
  }
});

test('a bundle of one certificate is taken, with a warning of what the steps will trust', () => {
  const one = path.join(dir, 'corp.pem');
  writeFileSync(one, CERT);
  const warned: string[] = [];
  egressOptions({ 'ca-file': one }, (m) => warned.push(m), {});
  assert.equal(warned.length, 1);
  assert.match(warned[0]!, /holds 1 certificate/);
});

test('--egress-proxy, else RUNNER_EGRESS_PROXY, else HTTPS_PROXY; NO_PROXY read; none turns it off', () => {
  assert.equal(egressOptions({ 'egress-proxy': 'http://proxy.corp.example:3128' }, undefined, {}).egressProxy?.host, 'proxy.corp.example');
  assert.equal(egressOptions({}, undefined, { RUNNER_EGRESS_PROXY: 'http://a.example:1' }).egressProxy?.host, 'a.example');
  const inherited = egressOptions({}, undefined, { HTTPS_PROXY: 'http://b.example:3128', NO_PROXY: 'localhost,.corp.example' }).egressProxy;
  assert.equal(inherited?.host, 'b.example');
  assert.deepEqual(inherited?.noProxy, ['localhost', '.corp.example']);
  assert.equal(egressOptions({ 'egress-proxy': 'none' }, undefined, { HTTPS_PROXY: 'http://b.example:3128' }).egressProxy, undefined);
  assert.throws(() => egressOptions({ 'egress-proxy': 'https://p.example' }, undefined, {}), /--egress-proxy: https:\/\/ proxies are not supported/);
  // loopback is the gateway's own container: refused when asked for, left out with a warning when inherited
  assert.throws(() => egressOptions({ 'egress-proxy': 'http://127.0.0.1:3128' }, undefined, {}), /loopback, which in a gateway's container is the container itself/);
  const warned: string[] = [];
  assert.equal(egressOptions({}, (m) => warned.push(m), { https_proxy: 'http://localhost:8080' }).egressProxy, undefined);
  assert.match(warned[0]!, /the gateways reach out directly: HTTPS_PROXY http:\/\/localhost:8080 is on loopback/);
});

test('mirrors from flags or variables, checked', () => {
  const o = egressOptions({ 'npm-registry': 'https://npm.corp.example/' }, undefined, { RUNNER_PIP_INDEX: 'http://pypi.corp.example/simple/' });
  assert.equal(o.company?.npmRegistry, 'https://npm.corp.example/');
  assert.equal(o.company?.pipIndex, 'http://pypi.corp.example/simple/');
  assert.throws(() => egressOptions({ 'pip-index': 'pypi.corp.example' }, undefined, {}), /--pip-index \(or RUNNER_PIP_INDEX\): "pypi.corp.example" is not a URL/);
  assert.equal(egressOptions({}, undefined, {}).company, undefined);
});
