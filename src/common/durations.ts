/** Parsing and formatting of durations (`90s`, `30m`, `1h30m`) and sizes (`512m`, `2g`). Pure. */

const DURATION_UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const DURATION_RE = /^(?:(\d+(?:\.\d+)?)(ms|s|m|h|d))+$/;
const DURATION_PART_RE = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;

/** `90s` → 90000; `1h30m` → 5400000. Returns undefined when the text is not a duration. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  if (!DURATION_RE.test(t)) return undefined;
  let total = 0;
  for (const m of t.matchAll(DURATION_PART_RE)) {
    total += Number(m[1]) * (DURATION_UNITS[m[2]!] ?? 0);
  }
  return total > 0 ? Math.round(total) : undefined;
}

const SIZE_UNITS: Record<string, number> = {
  '': 1, b: 1, k: 1024, kb: 1024, m: 1024 ** 2, mb: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3,
};
const SIZE_RE = /^(\d+(?:\.\d+)?)\s*(b|k|kb|m|mb|g|gb)?$/i;

/** `512m` → 536870912 bytes; `2g`; a bare number is bytes. Undefined when not a size. */
export function parseSize(text: string): number | undefined {
  const m = SIZE_RE.exec(text.trim());
  if (!m) return undefined;
  const bytes = Number(m[1]) * (SIZE_UNITS[(m[2] ?? '').toLowerCase()] ?? NaN);
  return Number.isFinite(bytes) && bytes > 0 ? Math.round(bytes) : undefined;
}

/** 61234 → `1m01s`; 4200 → `4.2s`. For people, not for parsing. */
export function formatDuration(ms: number): string {
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  const s = Math.round(ms / 1000);
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}

/** 536870912 → `512m`. */
export function formatSize(bytes: number): string {
  for (const [unit, size] of [['g', 1024 ** 3], ['m', 1024 ** 2], ['k', 1024]] as const) {
    if (bytes >= size) {
      const v = bytes / size;
      return `${Number.isInteger(v) ? v : v.toFixed(1)}${unit}`;
    }
  }
  return `${bytes}b`;
}
