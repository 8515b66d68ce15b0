/**
 * The `cache:` setting of a step, an agent or `defaults`: which of the
 * project's caches a step gets (src/cache/), and how. Pure.
 *
 *   cache: [npm, pip]                          where each tool looks: written by steps before any agent step,
 *                                              read by the others (src/cache/write-trust.ts)
 *   cache: { npm: rw }                         the file trusts this step to write it, wherever it runs
 *   cache: { npm: ro }                         the step reads it; what it writes is thrown away
 *   cache: { npm: { max: 1g } }                pruned back once it passes 1 GiB
 *   cache: { maven: { path: /home/agent/.m2/repository } }   a cache the runner does not know, mounted there
 */
import { z } from 'zod';
import { CACHE_MOUNT_ROOT, CACHE_NAME_RE, ECOSYSTEM_NAMES } from '../cache/ecosystems.js';
import { parseSize } from '../common/durations.js';

export interface CacheEntry {
  readOnly: boolean;
  /** `rw` (or `read_only: false`) said outright: the file trusts the step to write it, even after an agent step */
  writeAlways?: boolean;
  /** where it is mounted, for a cache the runner does not know (or to move one it does) */
  path?: string;
  /** bytes it is pruned back to; absent: the default bound */
  max?: number;
}

export type CacheSetting = Record<string, CacheEntry>;

/** Paths a cache must not cover: the step's own mounts (and what holds them), and the kernel's. */
const RESERVED = ['/home/agent/run-workspace', '/home/agent/project-workspace', '/home/agent/.runner'];
const SYSTEM = ['/proc', '/sys', '/dev', '/etc', '/usr', '/bin', '/sbin', '/lib', '/lib64', '/run'];

/** Why a custom cache path cannot be mounted, or undefined. */
export function cachePathProblem(p: string): string | undefined {
  if (!p.startsWith('/')) return `expected an absolute path in the step's container, like /home/agent/.m2/repository, got ${JSON.stringify(p)}`;
  // the engine takes a bind as source:target[:mode], and an overlay's layers as a comma list
  if (/[:,\s\\]/.test(p) || p.includes('\0')) return `a cache path cannot hold ":", ",", a backslash or spaces, got ${JSON.stringify(p)}`;
  const parts = p.split('/').filter(Boolean);
  if (parts.some((s) => s === '.' || s === '..')) return `a cache path cannot hold "." or ".." parts, got ${JSON.stringify(p)}`;
  const norm = `/${parts.join('/')}`;
  if (norm === '/') return 'a cache cannot be mounted at /';
  const under = (root: string) => norm === root || norm.startsWith(`${root}/`);
  const over = (root: string) => root.startsWith(`${norm}/`);
  const own = RESERVED.find((r) => under(r) || over(r));
  if (own) return `a cache at ${norm} would cover the step's ${own}: choose another path`;
  const sys = SYSTEM.find(under);
  if (sys) return `a cache cannot be mounted under ${sys}: choose a path like /home/agent/.cache/<tool>`;
  if (under(CACHE_MOUNT_ROOT) || over(CACHE_MOUNT_ROOT)) return `${CACHE_MOUNT_ROOT} is where the runner mounts the caches it knows: leave out path: or choose another`;
  return undefined;
}

const NAMES_HINT = `a cache the runner knows (${ECOSYSTEM_NAMES.join(', ')}) or a name of your own with a path:`;

function entry(name: string, v: unknown, add: (message: string, at?: string) => void): CacheEntry | undefined {
  if (v === true) return { readOnly: false };
  if (v === 'rw') return { readOnly: false, writeAlways: true };
  if (v === 'ro') return { readOnly: true };
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    add(`expected rw, ro or { path:, max:, read_only: }, got ${JSON.stringify(v)}`);
    return undefined;
  }
  const o = v as Record<string, unknown>;
  const out: CacheEntry = { readOnly: false };
  for (const [k, x] of Object.entries(o)) {
    if (k === 'read_only') {
      if (typeof x !== 'boolean') add('expected true or false', k);
      else {
        out.readOnly = x;
        if (!x) out.writeAlways = true;
      }
    } else if (k === 'max') {
      const bytes = typeof x === 'number' ? (x > 0 ? x : undefined) : typeof x === 'string' ? parseSize(x) : undefined;
      if (bytes === undefined) add(`expected a size like 512m or 2g, got ${JSON.stringify(x)}`, k);
      else out.max = bytes;
    } else if (k === 'path') {
      const problem = typeof x === 'string' ? cachePathProblem(x) : `expected a path, got ${JSON.stringify(x)}`;
      if (problem) add(problem, k);
      else out.path = `/${(x as string).split('/').filter(Boolean).join('/')}`;
    } else {
      add(`unknown key "${k}": a cache takes path:, max: and read_only:`, k);
    }
  }
  return out;
}

export const cacheSetting = z.unknown().transform((v, ctx): CacheSetting => {
  const add = (message: string, path: Array<string | number> = []) => ctx.addIssue({ code: 'custom', message, path });
  const out: CacheSetting = {};
  const pairs: Array<[string | number, string, unknown]> = Array.isArray(v)
    ? v.map((n, i) => [i, typeof n === 'string' ? n : JSON.stringify(n), true])
    : v !== null && typeof v === 'object'
      ? Object.entries(v as Record<string, unknown>).map(([k, x]) => [k, k, x])
      : [];
  if (!Array.isArray(v) && (v === null || typeof v !== 'object')) {
    add(`expected a list of caches like [npm] or a map like { npm: ro }, got ${JSON.stringify(v)}`);
    return z.NEVER;
  }
  for (const [at, name, x] of pairs) {
    if (!CACHE_NAME_RE.test(name)) {
      add(`expected a cache name of lowercase letters, digits, "_" and "-": ${NAMES_HINT}`, [at]);
      continue;
    }
    if (name in out) {
      add(`cache ${name} is named twice`, [at]);
      continue;
    }
    const e = entry(name, x, (message, key) => add(message, key ? [at, key] : [at]));
    if (!e) continue;
    if (e.path === undefined && !ECOSYSTEM_NAMES.includes(name)) {
      add(`the runner does not know where ${name} keeps its cache: give it a path: (like { ${name}: { path: /home/agent/.cache/${name} } }), or use ${ECOSYSTEM_NAMES.join(', ')}`, [at]);
      continue;
    }
    out[name] = e;
  }
  const targets = new Map<string, string>();
  for (const [name, e] of Object.entries(out)) {
    if (!e.path) continue;
    const other = targets.get(e.path);
    if (other) add(`caches ${other} and ${name} are both mounted at ${e.path}`, [name, 'path']);
    targets.set(e.path, name);
  }
  return out;
});
