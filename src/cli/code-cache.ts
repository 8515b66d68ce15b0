/**
 * V8's code cache for the runner's bundle (dist/runner/runner.cjs): the bytecode V8 made of it in an earlier
 * start, so a start does not parse and compile again what an earlier one did (Node 20 offers this to code
 * compiled through vm.Script only; its own loaders keep no cache).
 *
 * A cache is bytecode the runner will run, so it is read only from the user's own cache directory
 * ($XDG_CACHE_HOME/runner/code-cache, else ~/.cache/runner/code-cache): the runner runs on the host and no
 * step's container mounts it; the directory and the file must be the user's own and writable by no one else,
 * and the file is opened without following a link. A cache is named by a hash of the bundle's text, Node's
 * version and the flags Node runs with, and by the command (each loads its own part of the bundle); V8 checks
 * it again and rejects one that does not fit. Anything wrong with it (missing, unreadable, someone else's,
 * rejected) only costs that start its compile: the start then writes a fresh one, atomically. V8 checks a cache's
 * version, flags and source length but not its bytes (Node 20's V8 crashes on a cache with flipped bytes), so the
 * file begins with the SHA-256 of the rest, and a file whose bytes do not match it is not given to V8.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { closeSync, constants, fstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** Caches kept at most: one per command of the bundles in use; the oldest go first. */
const KEEP = 48;

export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CACHE_HOME;
  return path.join(xdg && path.isAbsolute(xdg) ? xdg : path.join(os.homedir(), '.cache'), 'runner', 'code-cache');
}

/** What a cache was made for: the bundle's text, this Node (version, platform, architecture) and the flags it runs with. */
export function cacheKey(source: string | Buffer, node = `${process.version} ${process.platform} ${process.arch}`, flags = [...process.execArgv, process.env.NODE_OPTIONS ?? '']): string {
  return createHash('sha256').update(node).update('\0').update(flags.join('\0')).update('\0').update(source).digest('hex').slice(0, 32);
}

/**
 * The command a start runs (its first argument), as a file name's part: each command loads its own part of the
 * bundle. `CMD --help` is a name of its own ("help"): it loads little, and a cache written then would serve CMD's
 * runs with what they compile left out of it.
 */
export function commandOf(argv: readonly string[]): string {
  const [first, ...rest] = argv;
  if (first === '--version' || first === '-v') return 'version';
  if (rest.length === 1 && (rest[0] === '--help' || rest[0] === '-h')) return 'help';
  return first !== undefined && /^[a-z]{1,16}$/.test(first) ? first : 'none';
}

export function cacheName(key: string, command: string): string {
  return `${key}-${command}.bin`;
}

/** A cache file's first bytes: the SHA-256 of the rest. */
const DIGEST = 32;

function digest(data: Buffer): Buffer {
  return createHash('sha256').update(data).digest();
}

/** The user's own, and writable by no one else. */
function private_(st: Stats): boolean {
  return st.uid === process.getuid?.() && (st.mode & 0o022) === 0;
}

/** The cache, when there is one the runner can trust; undefined otherwise (never an error). */
export function readCache(dir: string, name: string): Buffer | undefined {
  try {
    if (!private_(statSync(dir))) return undefined;
    const fd = openSync(path.join(dir, name), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      const st = fstatSync(fd);
      if (!st.isFile() || !private_(st) || st.size <= DIGEST) return undefined;
      const file = readFileSync(fd);
      const data = file.subarray(DIGEST);
      return timingSafeEqual(file.subarray(0, DIGEST), digest(data)) ? data : undefined;
    } finally {
      closeSync(fd);
    }
  } catch {
    return undefined;
  }
}

/** Writes the cache atomically (a whole file or none); a cache that cannot be written is only not there next time. */
export function writeCache(dir: string, name: string, data: Buffer): boolean {
  const tmp = path.join(dir, `.${name}.${process.pid}.tmp`);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    if (!private_(statSync(dir))) return false;
    writeFileSync(tmp, Buffer.concat([digest(data), data]), { mode: 0o600, flag: 'wx' });
    renameSync(tmp, path.join(dir, name));
  } catch {
    rmSync(tmp, { force: true });
    return false;
  }
  prune(dir);
  return true;
}

/** The oldest caches beyond KEEP go (those of earlier builds, in time). */
function prune(dir: string): void {
  try {
    const files = readdirSync(dir)
      .filter((n) => n.endsWith('.bin'))
      .map((n) => ({ n, t: statSync(path.join(dir, n)).mtimeMs }))
      .sort((a, b) => b.t - a.t);
    for (const { n } of files.slice(KEEP)) rmSync(path.join(dir, n), { force: true });
  } catch {
    // another start pruning at once: its work, not an error
  }
}
