/**
 * What to prune from a cache over its bound. Pure.
 *
 * Entries go oldest-written first, by mtime. The runner cannot see which
 * entries a step read: atime lies under noatime and is coarse under
 * relatime, and the step could set it anyway. The caches here are
 * content-addressed (npm's cacache, pip's HTTP cache and wheels, pnpm's
 * store): an entry is written once, when first fetched, so its mtime is its
 * age, and the tool takes an entry that is gone as a miss and fetches it
 * again. A step can set its own entries' times, but only in its own
 * project's cache, and whatever the times say the bytes come down under the
 * bound.
 *
 * Memory stays bounded whatever a step left (a million files, each its own
 * mtime): ages go into a fixed number of buckets, and everything up to the
 * bucket where enough bytes are freed goes.
 */

/** After a prune a cache holds at most this share of its bound, so that it does not hover at the bound and prune after every step. */
export const PRUNE_TO = 0.8;

/** How many bytes must go: none under the bound, else down to PRUNE_TO of it. */
export function bytesToFree(total: number, max: number): number {
  return total <= max ? 0 : total - Math.floor(max * PRUNE_TO);
}

/** One entry of `find -printf '%T@ %b\n'`: its mtime (seconds) and the bytes it takes on disk. */
export function parseEntry(line: string): { mtime: number; bytes: number } | undefined {
  const m = /^(-?\d+(?:\.\d+)?) (\d+)$/.exec(line);
  if (!m) return undefined;
  return { mtime: Number(m[1]), bytes: Number(m[2]) * 512 };
}

/** Bytes by age in `buckets` equal slices of [oldest, newest]. */
export class AgeHistogram {
  private readonly bytes: number[];
  private readonly width: number;

  constructor(
    readonly oldest: number,
    readonly newest: number,
    readonly buckets = 1024,
  ) {
    this.bytes = new Array<number>(buckets).fill(0);
    this.width = Math.max((newest - oldest) / buckets, 1e-9);
  }

  private index(mtime: number): number {
    return Math.min(this.buckets - 1, Math.max(0, Math.floor((mtime - this.oldest) / this.width)));
  }

  add(mtime: number, bytes: number): void {
    this.bytes[this.index(mtime)]! += bytes;
  }

  /**
   * The mtime at or before which everything goes so that at least `free`
   * bytes are freed: the end of the first bucket where the oldest entries
   * add up to it (the newest entry's time when nothing less will do).
   */
  cutoff(free: number): number {
    let sum = 0;
    for (let i = 0; i < this.buckets; i++) {
      sum += this.bytes[i]!;
      if (sum >= free) return Math.min(this.newest, this.oldest + (i + 1) * this.width);
    }
    return this.newest;
  }
}
