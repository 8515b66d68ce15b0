/** Who may call runner serve's endpoints: token, session cookie, Origin and Host checks. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkAccess, isLoopbackHost, SESSION_COOKIE, SESSION_SECONDS, sessionCookie, sessionValue, tokenMatches } from '../../src/serve/access.js';

const T = 'correct-horse-battery';
const NOW = Date.UTC(2026, 10, 22, 12, 0, 0);
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

test('a POST a browser marks as from another site is refused, even without an Origin header', () => {
  for (const site of ['cross-site', 'same-site']) {
    const v = checkAccess('POST', '/api/runs/r/cancel', { ...local, 'sec-fetch-site': site }, undefined);
    assert.equal(!v.ok && v.status, 403, site);
  }
  for (const site of ['same-origin', 'none']) assert.equal(checkAccess('POST', '/api/runs/r/cancel', { ...local, 'sec-fetch-site': site }, undefined).ok, true, site);
  assert.equal(checkAccess('GET', '/api/runs', { ...local, 'sec-fetch-site': 'cross-site' }, undefined).ok, true, 'reads are left to CORS');
});

test('with a token: bearer or session cookie, and only a few paths open', () => {
  const host = { host: 'runner.example.org' };
  assert.equal(checkAccess('GET', '/api/runs', host, T).ok, false);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, authorization: `Bearer ${T}` }, T).ok, true);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, authorization: `Bearer ${T}x` }, T).ok, false);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, cookie: `a=b; ${SESSION_COOKIE}=${sessionValue(T, NOW)}` }, T, NOW).ok, true);
  assert.equal(checkAccess('GET', '/api/runs', { ...host, cookie: `${SESSION_COOKIE}=${T}` }, T).ok, false, 'the raw token is not a session');
  for (const p of ['/healthz', '/login', '/logout', '/assets/app.js', '/assets/style.css', '/assets/favicon.svg', '/favicon.ico']) assert.equal(checkAccess('GET', p, host, T).ok, true, p);
  for (const p of ['/', '/metrics', '/api/pipelines']) assert.equal(checkAccess('GET', p, host, T).ok, false, p);
});

test('a session lasts a week from its issue, and its time cannot be moved without the token', () => {
  const host = { host: 'runner.example.org' };
  const at = (cookieValue: string, nowMs: number) => checkAccess('GET', '/api/runs', { ...host, cookie: `${SESSION_COOKIE}=${cookieValue}` }, T, nowMs).ok;
  const v = sessionValue(T, NOW);
  assert.equal(at(v, NOW + (SESSION_SECONDS - 1) * 1000), true);
  assert.equal(at(v, NOW + (SESSION_SECONDS + 1) * 1000), false, 'expired');
  const [, mac] = v.split('.');
  assert.equal(at(`${Math.floor(NOW / 1000) + 3600}.${mac}`, NOW + (SESSION_SECONDS + 1) * 1000), false, 'a later issue time does not match its HMAC');
  assert.equal(at(v, NOW - 3600_000), false, 'issued in the future');
  assert.match(sessionCookie(T, NOW, {}), /HttpOnly; SameSite=Strict; Path=\/; Max-Age=604800$/);
  assert.match(sessionCookie(T, NOW, { 'x-forwarded-proto': 'https' }), /; Secure$/, 'behind a TLS proxy');
});

test('the session value depends on the token and does not contain it', () => {
  assert.notEqual(sessionValue(T, NOW), sessionValue(`${T}!`, NOW));
  assert.ok(!sessionValue(T, NOW).includes(T));
  assert.equal(tokenMatches(T, T), true);
  assert.equal(tokenMatches('', T), false);
});

test('loopback host names', () => {
  for (const h of ['localhost', 'localhost:7700', '127.0.0.1', '127.1.2.3:80', '[::1]:7700', 'LOCALHOST']) assert.equal(isLoopbackHost(h), true, h);
  for (const h of ['', 'example.org', '127.0.0.1.example.org', '10.0.0.1:7700', '[::2]:1', 'localhost.example']) assert.equal(isLoopbackHost(h), false, h);
});
