/** Which roots vouch for a chain: each link checked by name and signature, from the leaf up. */
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { after, test } from 'node:test';
import { anchorOf, certificatesOf, topIssuer } from '../../src/gateway/chain-anchor.js';
import { makeTestCa } from '../fixtures/test-ca.js';

const a = makeTestCa(['a.example']);
const b = makeTestCa(['b.example']);
after(() => {
  a.close();
  b.close();
});
const x = (pem: string) => new X509Certificate(pem);

test('a leaf signed by a root in the set is anchored there; by another root, not', () => {
  assert.equal(anchorOf([x(a.cert)], [x(b.caPem), x(a.caPem)])?.subject, x(a.caPem).subject);
  assert.equal(anchorOf([x(a.cert)], [x(b.caPem)]), undefined);
  assert.equal(anchorOf([], [x(a.caPem)]), undefined);
});

test('a chain that carries its root is anchored by the root it carries, only when the set holds it', () => {
  assert.ok(anchorOf([x(a.cert), x(a.caPem)], [x(a.caPem)]));
  assert.equal(anchorOf([x(a.cert), x(a.caPem)], [x(b.caPem)]), undefined);
});

test('a chain whose links do not sign each other leads nowhere', () => {
  // b's leaf, then a's root, which did not sign it: a's root must not vouch for b's leaf
  assert.equal(anchorOf([x(b.cert), x(a.caPem)], [x(a.caPem)]), undefined);
});

test('a PEM text: its certificates, garbage left out; the top issuer on one line', () => {
  const got = certificatesOf(`${a.caPem}\n-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n${b.caPem}`);
  assert.equal(got.length, 2);
  assert.equal(topIssuer([x(a.cert)]), 'CN=runner test company CA');
  assert.equal(topIssuer([]), 'no certificate');
  assert.equal(topIssuer([x(a.cert), x(a.caPem)]), 'CN=runner test company CA', "the top certificate's issuer");
});
