import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CA_PATH, SYSTEM_BUNDLE_PATH } from '../../../src/plan/company-network.js';
import { companyPart } from '../../../src/run/step-addons/company-network.js';

test('a run without a company network adds nothing to its steps', () => {
  assert.equal(companyPart(undefined), undefined);
});

test("the CA bundle: mounted from the run's copy and handed in as files, at the variables' path and the system's; its variables under the step's env", () => {
  const part = companyPart({ ca: { pem: 'PEM', certificates: 140, from: '/etc/ca.pem', hostPath: '/home/r/network/ca-1.pem' }, npmRegistry: 'https://npm.corp/' })!;
  assert.deepEqual(part.mounts, [
    { source: '/home/r/network/ca-1.pem', target: CA_PATH, readOnly: true },
    { source: '/home/r/network/ca-1.pem', target: SYSTEM_BUNDLE_PATH, readOnly: true },
  ]);
  assert.deepEqual(part.files, [
    { target: CA_PATH, data: 'PEM', secret: false },
    { target: SYSTEM_BUNDLE_PATH, data: 'PEM', secret: false },
  ]);
  assert.equal(part.envDefaults!.NODE_EXTRA_CA_CERTS, CA_PATH);
  assert.equal(part.envDefaults!.npm_config_registry, 'https://npm.corp/');
  assert.equal(part.env, undefined, "nothing of the company's goes over the step's own env");
});

test('mirrors without a bundle: their variables only; a bundle not yet copied for the run is not mounted', () => {
  assert.deepEqual(companyPart({ pipIndex: 'http://pypi.corp/simple' }), {
    envDefaults: { PIP_INDEX_URL: 'http://pypi.corp/simple', UV_DEFAULT_INDEX: 'http://pypi.corp/simple', PIP_TRUSTED_HOST: 'pypi.corp' },
  });
  const part = companyPart({ ca: { pem: 'PEM', certificates: 140, from: '/etc/ca.pem' } })!;
  assert.equal(part.mounts, undefined);
  assert.equal(part.files, undefined);
});

test("a step whose gateway inspects gets the company's variables here, and its bundle (with the gateway's CA) from the gateway add-on", () => {
  const part = companyPart({ ca: { pem: 'PEM', certificates: 140, from: '/etc/ca.pem', hostPath: '/home/r/network/ca-1.pem' } }, { bundleElsewhere: true })!;
  assert.equal(part.mounts, undefined);
  assert.equal(part.files, undefined);
  assert.equal(part.envDefaults?.SSL_CERT_FILE, '/run/runner/ca.pem');
});
