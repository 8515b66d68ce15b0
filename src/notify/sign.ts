/**
 * A notification's signature: HMAC-SHA256 with the entry's secret over
 * `timestamp + "." + body`, sent as `x-runner-timestamp` (Unix seconds) and
 * `x-runner-signature: sha256=<hex>`. A receiver checks both, and refuses a
 * timestamp older than it allows (a replay). Pure.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export const TIMESTAMP_HEADER = 'x-runner-timestamp';
export const SIGNATURE_HEADER = 'x-runner-signature';

export function signature(secret: string, timestamp: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

/** The headers that sign `body` at `now`. */
export function signedHeaders(secret: string, body: string, now: Date): Record<string, string> {
  const timestamp = Math.floor(now.getTime() / 1000);
  return { [TIMESTAMP_HEADER]: String(timestamp), [SIGNATURE_HEADER]: signature(secret, timestamp, body) };
}

/**
 * A receiver's check, as docs/notify.md shows it: 'ok', or why the request is
 * refused ('unsigned', 'bad_signature', 'stale': older than `maxAgeSeconds` or
 * further than it in the future).
 */
export function verifySignature(
  secret: string,
  headers: { timestamp: string | undefined; signature: string | undefined },
  body: string,
  now: Date,
  maxAgeSeconds = 300,
): 'ok' | 'unsigned' | 'bad_signature' | 'stale' {
  const { timestamp, signature: sent } = headers;
  if (!timestamp || !sent || !/^\d+$/.test(timestamp)) return 'unsigned';
  const want = Buffer.from(signature(secret, Number(timestamp), body));
  const got = Buffer.from(sent);
  if (got.length !== want.length || !timingSafeEqual(got, want)) return 'bad_signature';
  if (Math.abs(now.getTime() / 1000 - Number(timestamp)) > maxAgeSeconds) return 'stale';
  return 'ok';
}
