/**
 * A step's `cache:` setting → the caches it mounts: where, read-only or not,
 * with which of the tool's settings, bounded how. Pure.
 */
import { CACHE_MOUNT_ROOT, DEFAULT_CACHE_MAX_BYTES, ECOSYSTEMS } from '../cache/ecosystems.js';
import type { CacheSetting } from '../pipeline/cache-setting.js';

export interface CachePlan {
  /** the cache's name: one directory per project in the runner home */
  name: string;
  /** where the step sees it */
  target: string;
  /** the tool's settings that point it there (none for a cache of your own) */
  env: Record<string, string>;
  /** the step reads it; what it writes goes to a layer thrown away after the step */
  readOnly: boolean;
  /** the file said `rw`: the step writes it even where the run's trust would not let it (src/cache/write-trust.ts) */
  writeAlways?: boolean;
  /** pruned back (oldest entries first) once it is bigger than this */
  maxBytes: number;
}

/** The nearest of step, agent and defaults that says `cache:` decides, whole (as network: and egress: do). */
export function planCaches(...levels: Array<CacheSetting | undefined>): CachePlan[] {
  const setting = levels.find((l) => l !== undefined) ?? {};
  return Object.entries(setting)
    .map(([name, e]) => {
      const target = e.path ?? `${CACHE_MOUNT_ROOT}/${name}`;
      return { name, target, env: ECOSYSTEMS[name]?.env(target) ?? {}, readOnly: e.readOnly, ...(e.writeAlways ? { writeAlways: true } : {}), maxBytes: e.max ?? DEFAULT_CACHE_MAX_BYTES };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/** The caches' settings, one environment: what the step's container gets on top of its own env. */
export function cacheEnv(caches: readonly CachePlan[]): Record<string, string> {
  return Object.assign({}, ...caches.map((c) => c.env)) as Record<string, string>;
}
