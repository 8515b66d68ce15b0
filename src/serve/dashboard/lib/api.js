// @ts-check
/**
 * Calls to the server's JSON API. Each says it comes from the dashboard
 * (x-runner-client), so the server can record "via dashboard".
 */

/** What the server refused, with its typed code and details when it gave them. */
export class ApiError extends Error {
  /** @param {string} message @param {number} status @param {string | undefined} code @param {string[]} details */
  constructor(message, status, code, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

/** @param {string} url @param {RequestInit} [init] @returns {Promise<any>} */
export async function api(url, init = {}) {
  const res = await fetch(url, { credentials: 'same-origin', ...init, headers: { 'x-runner-client': 'dashboard', ...(init.headers ?? {}) } });
  if (res.status === 401) {
    location.assign('/login');
    throw new Error('not logged in');
  }
  const body = res.headers.get('content-type')?.includes('json') ? await res.json() : await res.text();
  if (!res.ok) {
    const b = typeof body === 'object' && body !== null ? body : {};
    const details = Array.isArray(b.details) ? b.details.map(String) : [];
    throw new ApiError(typeof b.error === 'string' ? b.error : `${res.status} ${res.statusText}`, res.status, typeof b.code === 'string' ? b.code : undefined, details);
  }
  return body;
}

/** A POST with a JSON body. @param {string} url @param {unknown} [body] */
export function post(url, body = {}) {
  return api(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

/** A run's part of the API: `/api/runs/<id>` and below. @param {string} runId @param {string} [rest] */
export function runUrl(runId, rest = '') {
  return `/api/runs/${encodeURIComponent(runId)}${rest}`;
}
