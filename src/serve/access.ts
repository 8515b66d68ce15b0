/**
 * Who may use runner serve's HTTP endpoints. Pure: it reads request headers
 * and decides.
 *
 * - With a token (RUNNER_TOKEN), every endpoint but /healthz, the login page
 *   and the dashboard's static files needs it: as `Authorization: Bearer
 *   <token>` (scripts), or as the session cookie the login page sets (the
 *   dashboard; browsers cannot add headers to page loads or EventSource).
 *   The cookie holds its issue time and an HMAC of it under the token, never
 *   the token: it lasts a week, POST /logout drops it, and a new token ends
 *   every session.
 * - Without a token (loopback only), the Host header must name a loopback
 *   host, so a web page cannot reach the API through DNS rebinding.
 * - A request that changes something (POST) with an Origin header must come
 *   from the server's own origin, and one a browser marks with Sec-Fetch-Site
 *   must be same-origin: another site's page cannot trigger or cancel runs
 *   through the visitor's browser.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';

export const SESSION_COOKIE = 'runner_session';

export type Verdict = { ok: true } | { ok: false; status: 401 | 403; message: string };

const OPEN_PATHS = new Set(['/healthz', '/login', '/logout', '/assets/app.js', '/assets/style.css', '/assets/favicon.svg', '/favicon.ico']);

/** How long a dashboard session lasts, in seconds. */
export const SESSION_SECONDS = 7 * 24 * 3600;

/** `<issued, unix seconds>.<HMAC of it under the token>` */
export function sessionValue(token: string, nowMs: number): string {
  const issued = String(Math.floor(nowMs / 1000));
  return `${issued}.${sign(token, issued)}`;
}

function sign(token: string, issued: string): string {
  return createHmac('sha256', token).update(`runner dashboard session v2 ${issued}`).digest('hex');
}

/** The Set-Cookie value after a good login; Secure when a TLS proxy says the browser came over HTTPS. */
export function sessionCookie(token: string, nowMs: number, headers: IncomingHttpHeaders): string {
  const secure = headers['x-forwarded-proto'] === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${sessionValue(token, nowMs)}; HttpOnly; SameSite=Strict; Path=/; Max-Age=${SESSION_SECONDS}${secure}`;
}

export const LOGGED_OUT_COOKIE = `${SESSION_COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0`;

export function checkAccess(
  method: string,
  pathname: string,
  headers: IncomingHttpHeaders,
  token: string | undefined,
  nowMs: number = Date.now(),
): Verdict {
  const host = headers.host ?? '';
  if (!token && !isLoopbackHost(host)) {
    return { ok: false, status: 403, message: `this server answers only to a loopback host name, not "${host}" (set RUNNER_TOKEN to serve other names)` };
  }
  if (method !== 'GET' && method !== 'HEAD' && headers.origin !== undefined && !sameOrigin(headers.origin, host)) {
    return { ok: false, status: 403, message: `a request from ${headers.origin} may not change anything here` };
  }
  const site = headers['sec-fetch-site'];
  if (method !== 'GET' && method !== 'HEAD' && site !== undefined && site !== 'same-origin' && site !== 'none') {
    return { ok: false, status: 403, message: `a request from another site (Sec-Fetch-Site: ${site}) may not change anything here` };
  }
  if (!token || OPEN_PATHS.has(pathname)) return { ok: true };
  if (bearerMatches(headers.authorization, token) || cookieMatches(headers.cookie, token, nowMs)) return { ok: true };
  return { ok: false, status: 401, message: 'a token is required: send Authorization: Bearer <RUNNER_TOKEN>, or log in at /login' };
}

export function isLoopbackHost(hostHeader: string): boolean {
  const name = hostName(hostHeader);
  return name === 'localhost' || name === '::1' || /^127\.\d+\.\d+\.\d+$/.test(name);
}

function hostName(hostHeader: string): string {
  const m = /^\[([^\]]+)\](?::\d+)?$/.exec(hostHeader);
  if (m) return m[1]!.toLowerCase();
  return hostHeader.replace(/:\d+$/, '').toLowerCase();
}

function sameOrigin(origin: string, host: string): boolean {
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}

function bearerMatches(header: string | undefined, token: string): boolean {
  const given = /^Bearer (.+)$/.exec(header ?? '')?.[1];
  return given !== undefined && equal(given, token);
}

function cookieMatches(header: string | undefined, token: string, nowMs: number): boolean {
  const value = (header ?? '')
    .split(';')
    .map((c) => c.trim())
    .find((c) => c.startsWith(`${SESSION_COOKIE}=`))
    ?.slice(SESSION_COOKIE.length + 1);
  const m = /^(\d{1,12})\.([0-9a-f]{64})$/.exec(value ?? '');
  if (!m) return false;
  const age = nowMs / 1000 - Number(m[1]);
  return age >= -60 && age <= SESSION_SECONDS && equal(m[2]!, sign(token, m[1]!));
}

function equal(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Whether the token the login form sent is the right one. */
export function tokenMatches(given: string, token: string): boolean {
  return equal(given, token);
}
