/** Time-sortable, unique run ids: `20261122-061500-k3f9a2` (UTC). Pure apart from randomness. */
import { randomBytes } from 'node:crypto';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz0123456789';

export function newRunId(now: Date, random: (n: number) => Buffer = randomBytes): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  const stamp =
    `${now.getUTCFullYear()}${p(now.getUTCMonth() + 1)}${p(now.getUTCDate())}-` +
    `${p(now.getUTCHours())}${p(now.getUTCMinutes())}${p(now.getUTCSeconds())}`;
  const suffix = [...random(6)].map((b) => ALPHABET[b % ALPHABET.length]).join('');
  return `${stamp}-${suffix}`;
}
