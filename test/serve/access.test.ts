/** Who may call runner serve's endpoints: token, session cookie, Origin and Host checks. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkAccess, isLoopbackHost, SESSION_COOKIE, sessionValue, tokenMatches } from '../../src/serve/access.js';

const T = 'correct-horse-battery';
const local = { host: '127.0.0.1:7700' };

test('without a token, any path is open on a loopback host name', () => {
  for (const p of ['/', '/api/runs', '/metrics']) assert.deepEqual(checkAccess('GET', p, local, undefined), { ok: true });
  assert.equal(checkAccess('POST', '/api/pipelines/p/runs', local, undefined).ok, true, 'curl sends no Origin');
});

test('without a token, a host name that is not loopback is refused (DNS rebinding)', () => {
  const v = checkAccess('GET', '/api/runs', { host: 'attacker.example:7700' }, undefined);
  assert.equal(v.ok, false);
  assert.equal(!v.ok && v.status, 403);
});

test('a POST from another origin is refused; from the same origin it passes', () => {
  const evil = checkAccess('POST', '/api/pipelines/p/runs', { ...local, origin: 'https://attacker.example' }, undefined);
  assert.equal(!evil.ok && evil.status, 403);
  assert.equal(checkAccess('POST', '/api/pipelines/p/runs', { ...local, origin: 'null' }, undefined).ok, false);
  assert.equal(checkAccess('POST', '/api/pipelines/p/runs', { ...local, origin: 'http://127.0.0.1:7700' }, undefined).ok, true);
  assert.equal(checkAccess('GET', '/api/runs', { ...local, origin: 'https://attacker.example' }, undefined).ok, true, 'reads are left to CORS');
});

test('with a token: bearer or session cookie, and only a few paths open', () => {
  const host = { host: 'runner.example.org' };
  assert.equal(checkAccess('GET', '/api/runs', host, T).ok, false);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, authorization: `Bearer ${T}` }, T).ok, true);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, authorization: `Bearer ${T}x` }, T).ok, false);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, cookie: `a=b; ${SESSION_COOKIE}=${sessionValue(T)}` }, T).ok, true);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, cookie: `${SESSION_COOKIE}=${T}` }, T).ok, false, 'the raw token is not a session');
  for (const p of ['/healthz', '/login', '/assets/app.js', '/assets/style.css']) assert.equal(checkAccess('GET', p, host, T).ok, true, p);
  for (const p of ['/', '/metrics', '/api/pipelines']) assert.equal(checkAccess('GET', p, host, T).ok, false, p);
});

test('the session value depends on the token and does not contain it', () => {
  assert.notEqual(sessionValue(T), sessionValue(`${T}!`));
  assert.ok(!sessionValue(T).includes(T));
  assert.equal(tokenMatches(T, T), true);
  assert.equal(tokenMatches('', T), false);
});

test('loopback host names', () => {
  for (const h of ['localhost', 'localhost:7700', '127.0.0.1', '127.1.2.3:80', '[::1]:7700', 'LOCALHOST']) assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['', 'example.org', '127.0.0.1.example.org', '10.0.0.1:7700', '[::2]:1', 'localhost.example']) assert.equal(isLoopbackHost(h), false, h);
});
