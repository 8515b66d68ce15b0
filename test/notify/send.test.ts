import assert from 'node:assert/strict';
import { test } from 'node:test';
import { send, type Attempt } from '../../src/notify/send.js';
import { verifySignature } from '../../src/notify/sign.js';
import { receiver } from './receiver.js';

const FAST = { attempts: 4, firstPauseMs: 50, attemptMs: 2000, deadlineMs: 5000 };

test('a 500 is tried again after a pause that doubles, and the third attempt delivers; each attempt is signed afresh', async () => {
  const r = await receiver((n) => (n < 3 ? 500 : 204));
  const attempts: Attempt[] = [];
  const ok = await send({ url: r.url, body: '{"a":1}', secret: 's3cret', now: () => new Date() }, (a) => attempts.push(a), FAST);
  assert.equal(ok, true);
  assert.deepEqual(attempts.map((a) => [a.attempt, a.ok, a.httpStatus]), [[1, false, 500], [2, false, 500], [3, true, 204]]);
  const gaps = [r.got[1]!.at - r.got[0]!.at, r.got[2]!.at - r.got[1]!.at];
  assert.ok(gaps[0]! >= 45 && gaps[1]! >= 95, `pauses of about 50 then 100 ms: ${gaps.join(', ')}`);
  for (const g of r.got) {
    assert.equal(g.body, '{"a":1}');
    assert.equal(g.headers['content-type'], 'application/json');
    assert.equal(verifySignature('s3cret', { timestamp: g.headers['x-runner-timestamp'] as string, signature: g.headers['x-runner-signature'] as string }, g.body, new Date()), 'ok');
  }
});

test('a receiver that never answers costs at most the deadline: attempts are cut, then it gives up', async () => {
  const r = await receiver(() => 'hang');
  const attempts: Attempt[] = [];
  const started = Date.now();
  const ok = await send({ url: r.url, body: '{}', now: () => new Date() }, (a) => attempts.push(a), { attempts: 4, firstPauseMs: 50, attemptMs: 300, deadlineMs: 800 });
  const took = Date.now() - started;
  assert.equal(ok, false);
  assert.ok(took < 1500, `gave up after ${took} ms, deadline 800 ms`);
  assert.ok(attempts.length >= 2 && attempts.every((a) => !a.ok && /no answer within/.test(a.error ?? '')), JSON.stringify(attempts));
});

test('an unsigned entry sends no signature headers; a refused connection is an attempt that failed with its code', async () => {
  const r = await receiver();
  await send({ url: r.url, body: '{}', now: () => new Date() }, () => undefined, FAST);
  assert.equal(r.got[0]!.headers['x-runner-signature'], undefined);
  const url = r.url;
  await r.close();
  const attempts: Attempt[] = [];
  assert.equal(await send({ url, body: '{}', now: () => new Date() }, (a) => attempts.push(a), { ...FAST, attempts: 2 }), false);
  assert.deepEqual(attempts.map((a) => a.error), ['ECONNREFUSED', 'ECONNREFUSED']);
});

test('a redirect is not followed: it is an answer other than 2xx', async () => {
  const r = await receiver(() => 302);
  const attempts: Attempt[] = [];
  assert.equal(await send({ url: r.url, body: '{}', now: () => new Date() }, (a) => attempts.push(a), { ...FAST, attempts: 1 }), false);
  assert.deepEqual(attempts.map((a) => a.httpStatus), [302]);
});
