/** What a company's network gives every step (the bundle's variables, the mirrors' settings) and every gateway (the mirrors' hosts). */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CA_PATH, caBundleProblem, caWarning, countCertificates, mirrorAllow, mirrorEnv, mirrorUrlProblem, networkEnv } from '../../src/plan/company-network.js';

const CERT = '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n';

test('a bundle points every usual tool at the one file', () => {
  const env = networkEnv({ ca: { pem: CERT, certificates: 1, from: '/x.pem' } });
  for (const k of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'PIP_CERT', 'GIT_SSL_CAINFO', 'CURL_CA_BUNDLE']) assert.equal(env[k], CA_PATH, k);
  assert.deepEqual(networkEnv(undefined), {});
  assert.deepEqual(networkEnv({}), {});
});

test('mirrors: npm and pip settings; pip trusts a plain-HTTP index host, and only then', () => {
  assert.deepEqual(mirrorEnv({ npmRegistry: 'https://npm.corp.example/', pipIndex: 'http://pypi.corp.example:8080/simple/' }), {
    npm_config_registry: 'https://npm.corp.example/',
    PIP_INDEX_URL: 'http://pypi.corp.example:8080/simple/',
    UV_DEFAULT_INDEX: 'http://pypi.corp.example:8080/simple/',
    PIP_TRUSTED_HOST: 'pypi.corp.example:8080',
  });
  assert.equal(mirrorEnv({ pipIndex: 'https://pypi.corp.example/simple/' }).PIP_TRUSTED_HOST, undefined);
});

test("the mirrors' hosts join every gateway's allowlist, with their port when it is not the usual one", () => {
  assert.deepEqual(mirrorAllow({ npmRegistry: 'https://npm.corp.example/', pipIndex: 'http://pypi.corp.example:8080/simple/' }), ['npm.corp.example', 'pypi.corp.example:8080']);
  assert.deepEqual(mirrorAllow({ npmRegistry: 'http://mirror.example/npm/', pipIndex: 'http://mirror.example/pypi/simple/' }), ['mirror.example']);
  assert.deepEqual(mirrorAllow(undefined), []);
});

test('a mirror URL: http(s), a name a gateway can allow, no credentials', () => {
  assert.equal(mirrorUrlProblem('--npm-registry', 'https://npm.corp.example/'), undefined);
  assert.match(mirrorUrlProblem('--npm-registry', 'npm.corp.example')!, /not a URL: write one like https:/);
  assert.match(mirrorUrlProblem('--pip-index', 'ftp://pypi.example/')!, /not an http\(s\) URL/);
  assert.match(mirrorUrlProblem('--pip-index', 'http://10.0.0.5/simple/')!, /give the mirror by its name/);
  assert.match(mirrorUrlProblem('--pip-index', 'https://me:pw@pypi.example/simple/')!, /user or password/);
});

test('a bundle must hold PEM certificates, no key, within its size; a small one is warned of', () => {
  assert.equal(countCertificates(CERT + CERT), 2);
  assert.equal(caBundleProblem('/b.pem', CERT, 100), undefined);
  assert.match(caBundleProblem('/b.pem', 'hello', 5)!, /holds no PEM certificate.*\/etc\/ssl\/certs\/ca-certificates\.crt/);
  assert.match(caBundleProblem('/b.der', '0\x82\0\x01', 4)!, /binary file.*openssl x509 -inform der/);
  assert.match(caBundleProblem('/b.pem', `${CERT}-----BEGIN PRIVATE KEY-----\n`, 100)!, /private key/);
  // attack: keys in the other armours slipped past a check for PEM's alone, and every step would read them
  for (const key of ['-----BEGIN PGP PRIVATE KEY BLOCK-----', '---- BEGIN SSH2 ENCRYPTED PRIVATE KEY ----', 'PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1', '-----BEGIN OPENSSH PRIVATE KEY-----']) {
    assert.match(caBundleProblem('/b.pem', `${CERT}${key}\n`, 100)!, /private key/, key);
  }
  assert.match(caBundleProblem('/b.pem', CERT, 5 * 1024 ** 2)!, /at most 1 MiB/);
  assert.match(caWarning({ pem: CERT, certificates: 1, from: '/corp.pem' })!, /holds 1 certificate: .*cat \/etc\/ssl\/certs\/ca-certificates\.crt \/corp\.pem > bundle\.pem/);
  assert.equal(caWarning({ pem: CERT, certificates: 140, from: '/etc/ssl/certs/ca-certificates.crt' }), undefined);
});
