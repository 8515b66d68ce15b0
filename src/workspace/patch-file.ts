/**
 * A binary patch written by git, with the host's memory bounded whatever the
 * step wrote. `git diff --binary` holds both sides of a file in memory (and
 * fails past 2 GiB), so files over BIG_FILE are left out of git's patch and
 * named in it by a stub of our own, `Binary files a/x and b/x differ` with
 * their full blob ids, the way git names a binary file it does not show: their
 * content is on the branch, not in the patch. `git add` streams such files
 * (core.bigFileThreshold), so committing them costs no memory either.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { rm, writeFile } from 'node:fs/promises';
import { pipeline } from 'node:stream/promises';
import type { Git, GitCall } from '../git/git.js';

/** Files above this size are streamed by git add and named, not carried, in patches. */
export const BIG_FILE = 16 * 1024 * 1024;
export const BIG_FILE_CONFIG = `core.bigFileThreshold=${BIG_FILE}`;
/** Up to this many big files are left out by name on one git command line; beyond, the other files are diffed in batches. */
const MAX_EXCLUDED = 200;

export interface RawChange {
  oldMode: string;
  newMode: string;
  oldOid: string;
  newOid: string;
  status: string;
  path: string;
}

/** `git diff --raw -z --no-abbrev` output as changes. Pure. */
export function parseRawDiff(out: string): RawChange[] {
  const parts = out.split('\0');
  const changes: RawChange[] = [];
  for (let i = 0; i + 1 < parts.length; i += 2) {
    const meta = parts[i]!.replace(/^:/, '').split(' ');
    if (meta.length < 5) continue;
    changes.push({ oldMode: meta[0]!, newMode: meta[1]!, oldOid: meta[2]!, newOid: meta[3]!, status: meta[4]!, path: parts[i + 1]! });
  }
  return changes;
}

const NULL_OID = /^0+$/;

/** A path as git prints it in a patch header: C-quoted when it holds anything but plain printable ASCII. Pure. */
export function quotePath(p: string): string {
  const bytes = Buffer.from(p, 'utf8');
  if (![...bytes].some((b) => b < 0x20 || b >= 0x7f || b === 0x22 || b === 0x5c)) return p;
  const named: Record<number, string> = { 0x07: '\\a', 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0b: '\\v', 0x0c: '\\f', 0x0d: '\\r', 0x22: '\\"', 0x5c: '\\\\' };
  let out = '"';
  for (const b of bytes) out += named[b] ?? (b < 0x20 || b >= 0x7f ? `\\${b.toString(8).padStart(3, '0')}` : String.fromCharCode(b));
  return `${out}"`;
}

/** The patch text git would print for a binary file it does not show. Pure. */
export function binaryStub(c: RawChange): string {
  const a = quotePath(`a/${c.path}`);
  const b = quotePath(`b/${c.path}`);
  const lines = [`diff --git ${a} ${b}`];
  if (c.status === 'A') lines.push(`new file mode ${c.newMode}`, `index ${c.oldOid}..${c.newOid}`, `Binary files /dev/null and ${b} differ`);
  else if (c.status === 'D') lines.push(`deleted file mode ${c.oldMode}`, `index ${c.oldOid}..${c.newOid}`, `Binary files ${a} and /dev/null differ`);
  else {
    if (c.oldMode !== c.newMode) lines.push(`old mode ${c.oldMode}`, `new mode ${c.newMode}`, `index ${c.oldOid}..${c.newOid}`);
    else lines.push(`index ${c.oldOid}..${c.newOid} ${c.newMode}`);
    lines.push(`Binary files ${a} and ${b} differ`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * Writes `git diff --binary RANGE` into `out` (a path git's user can write),
 * files over BIG_FILE named by a stub. RANGE is `[from, to]`, or `['--cached', head]`
 * with an index in `call`. Returns the big files' paths.
 */
export async function writeBinaryPatch(git: Git, call: GitCall, range: string[], out: string): Promise<string[]> {
  const c: GitCall = { ...call, config: [...(call.config ?? []), BIG_FILE_CONFIG] };
  const changes = parseRawDiff((await git.run(['diff', '--raw', '-z', '--no-renames', '--no-abbrev', '--no-ext-diff', ...range], c)).stdout);
  const sizes = await blobSizes(git, c, changes.flatMap((ch) => [ch.oldOid, ch.newOid]).filter((o) => !NULL_OID.test(o)));
  const big = changes.filter((ch) => (sizes.get(ch.oldOid) ?? 0) > BIG_FILE || (sizes.get(ch.newOid) ?? 0) > BIG_FILE);
  if (big.length === 0) {
    await git.run(['diff', '--binary', '--no-ext-diff', '--no-textconv', `--output=${out}`, ...range], c);
    return [];
  }
  const diff = (to: string, paths: string[]) => git.run(['diff', '--binary', '--no-renames', '--no-ext-diff', '--no-textconv', `--output=${to}`, ...range, '--', ...paths], c);
  if (big.length <= MAX_EXCLUDED) {
    await diff(out, big.map((b) => `:(exclude,literal)${b.path}`));
  } else {
    // Too many to leave out on one command line: the other files, a command line's worth at a time.
    await writeFile(out, '');
    const bigPaths = new Set(big.map((b) => b.path));
    const part = `${out}.part`;
    for (const batch of argBatches(changes.filter((ch) => !bigPaths.has(ch.path)).map((ch) => `:(literal)${ch.path}`))) {
      await diff(part, batch);
      await appendFile(part, out);
    }
    await rm(part, { force: true });
  }
  await pipeline(
    (async function* () {
      for (const b of big) yield binaryStub(b);
    })(),
    createWriteStream(out, { flags: 'a' }),
  );
  return big.map((b) => b.path);
}

/** Arguments in groups that fit a command line (well under Linux's 2 MiB for argv and environment). Pure. */
export function argBatches(args: string[], maxBytes = 256 * 1024): string[][] {
  const out: string[][] = [];
  let cur: string[] = [];
  let size = 0;
  for (const a of args) {
    const n = Buffer.byteLength(a) + 1;
    if (cur.length && size + n > maxBytes) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(a);
    size += n;
  }
  if (cur.length) out.push(cur);
  return out;
}

/** The sizes of blobs, from the object database (never the files). */
async function blobSizes(git: Git, call: GitCall, oids: string[]): Promise<Map<string, number>> {
  const sizes = new Map<string, number>();
  if (oids.length === 0) return sizes;
  const r = await git.run(['cat-file', '--batch-check=%(objectname) %(objecttype) %(objectsize)'], { ...call, input: `${[...new Set(oids)].join('\n')}\n` });
  for (const line of r.stdout.split('\n')) {
    const [oid, type, size] = line.split(' ');
    if (oid && type === 'blob' && size) sizes.set(oid, Number(size));
  }
  return sizes;
}

/** Appends one file to another, streamed. */
async function appendFile(from: string, to: string): Promise<void> {
  await pipeline(createReadStream(from), createWriteStream(to, { flags: 'a' }));
}
