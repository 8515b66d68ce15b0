import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { test } from 'node:test';
import { signature, signedHeaders, verifySignature } from '../../src/notify/sign.js';

const at = new Date('2030-01-02T03:04:05Z');

test('the signature is HMAC-SHA256 over timestamp.body, hex, prefixed sha256=', () => {
  const h = signedHeaders('k', '{"x":1}', at);
  const ts = Math.floor(at.getTime() / 1000);
  assert.equal(h['x-runner-timestamp'], String(ts));
  assert.equal(h['x-runner-signature'], `sha256=${createHmac('sha256', 'k').update(`${ts}.{"x":1}`).digest('hex')}`);
  assert.equal(signature('k', ts, '{"x":1}'), h['x-runner-signature']);
});

test('a receiver refuses another body, another secret, a missing header, and a timestamp older than 5 minutes (a replay)', () => {
  const body = '{"status":"failed"}';
  const h = signedHeaders('k', body, at);
  const sent = { timestamp: h['x-runner-timestamp'], signature: h['x-runner-signature'] };
  assert.equal(verifySignature('k', sent, body, at), 'ok');
  assert.equal(verifySignature('k', sent, body, new Date(at.getTime() + 299_000)), 'ok');
  assert.equal(verifySignature('k', sent, body, new Date(at.getTime() + 301_000)), 'stale');
  assert.equal(verifySignature('k', sent, '{"status":"succeeded"}', at), 'bad_signature');
  assert.equal(verifySignature('other', sent, body, at), 'bad_signature');
  // the timestamp is signed: a replay with a fresh timestamp does not verify
  assert.equal(verifySignature('k', { ...sent, timestamp: String(Number(sent.timestamp) + 600) }, body, new Date(at.getTime() + 600_000)), 'bad_signature');
  assert.equal(verifySignature('k', { timestamp: undefined, signature: sent.signature }, body, at), 'unsigned');
});
