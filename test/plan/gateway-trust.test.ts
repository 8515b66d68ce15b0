/** What a step behind an inspecting gateway trusts: its roots and the gateway's CA, where its tools look. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CA_PATH, SYSTEM_BUNDLE_PATH } from '../../src/plan/company-network.js';
import { trustBundle, trustPart } from '../../src/plan/gateway-trust.js';

const GW = '-----BEGIN CERTIFICATE-----\nMIIBgw\n-----END CERTIFICATE-----\n';
const ROOTS = '-----BEGIN CERTIFICATE-----\nMIIBroot\n-----END CERTIFICATE-----\n\n\n';

test('the bundle is the roots, then the gateway CA; without roots, the gateway CA alone', () => {
  assert.equal(trustBundle(GW, ROOTS), `${ROOTS.trimEnd()}\n${GW.trim()}\n`);
  assert.equal(trustBundle(GW, undefined), `${GW.trim()}\n`);
  assert.equal(trustBundle(GW, '  \n'), `${GW.trim()}\n`);
});

test("the bundle goes where the company's does: both paths, mounted read-only and as files, and the usual variables", () => {
  const part = trustPart('B', '/home/runner/network/gateway-ca-x.pem');
  assert.deepEqual(part.mounts, [
    { source: '/home/runner/network/gateway-ca-x.pem', target: CA_PATH, readOnly: true },
    { source: '/home/runner/network/gateway-ca-x.pem', target: SYSTEM_BUNDLE_PATH, readOnly: true },
  ]);
  assert.deepEqual(part.files, [
    { target: CA_PATH, data: 'B', secret: false },
    { target: SYSTEM_BUNDLE_PATH, data: 'B', secret: false },
  ]);
  for (const k of ['NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'REQUESTS_CA_BUNDLE', 'GIT_SSL_CAINFO', 'CURL_CA_BUNDLE', 'PIP_CERT']) assert.equal(part.envDefaults[k], CA_PATH, k);
});
