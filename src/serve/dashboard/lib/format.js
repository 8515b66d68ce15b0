// @ts-check
/** How numbers, times and money read on the page: as people write them. */
import { el } from './dom.js';

/** `45s`, `3m 12s`, `2h 5m`. @param {number | null | undefined} ms */
export function duration(ms) {
  if (ms === null || ms === undefined) return '';
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
}

/** A time as `in 3 h` or `5 min ago`, the full date on hover. @param {string} iso */
export function when(iso) {
  const d = new Date(iso);
  const diff = d.getTime() - Date.now();
  const abs = Math.abs(diff);
  const rel = abs < 60_000 ? `${Math.round(abs / 1000)}s` : abs < 3_600_000 ? `${Math.round(abs / 60_000)} min` : abs < 172_800_000 ? `${Math.round(abs / 3_600_000)} h` : `${Math.round(abs / 86_400_000)} days`;
  return el('time', { datetime: iso, title: d.toLocaleString() }, diff >= 0 ? `in ${rel}` : `${rel} ago`);
}

/** A count as people write it: 950, 37.8k, 1.2M. @param {number | null | undefined} n */
export function count(n) {
  if (n === null || n === undefined || !Number.isFinite(n)) return '?';
  const abs = Math.abs(n);
  const short = (/** @type {number} */ x, /** @type {string} */ unit) => `${(Math.round(x * 10) / 10).toString()}${unit}`;
  if (abs < 1000) return String(Math.round(n));
  if (abs < 999_950) return short(n / 1000, 'k');
  if (abs < 999_950_000) return short(n / 1e6, 'M');
  return short(n / 1e9, 'B');
}

/** Dollars: cents for a dollar and up, more places below (an agent call costs fractions of a cent). @param {number | null | undefined} usd */
export function money(usd) {
  if (usd === null || usd === undefined || !Number.isFinite(usd)) return '—';
  if (usd === 0) return '$0';
  if (Math.abs(usd) >= 1) return `$${usd.toFixed(2)}`;
  if (Math.abs(usd) >= 0.01) return `$${usd.toFixed(3)}`;
  return `$${usd.toFixed(4)}`;
}

/** Bytes as 512 B, 3.4 KB, 10.5 MB. @param {number} n */
export function bytes(n) {
  if (n < 1000) return `${n} B`;
  if (n < 1e6) return `${(n / 1e3).toFixed(1)} KB`;
  if (n < 1e9) return `${(n / 1e6).toFixed(1)} MB`;
  return `${(n / 1e9).toFixed(1)} GB`;
}
