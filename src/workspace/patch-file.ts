/**
 * A binary patch written by git, with the host's memory bounded whatever the
 * step wrote. `git diff --binary` holds both sides of a file in memory (and
 * fails past 2 GiB), so files over BIG_FILE are kept out of git's patch and
 * named in it by a stub of our own, `Binary files a/x and b/x differ` with
 * their full blob ids, the way git names a binary file it does not show.
 *
 * They are kept out by diffing two trees from which the big files were taken
 * out (temporary indexes, fed exact bytes): no pathspec, so a name that is not
 * UTF-8, or a file that became a directory, cannot slip through nor take other
 * files with it. `git add` streams such files
 * (core.bigFileThreshold), so committing them costs no memory either.
 */
import { createWriteStream } from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Git, GitCall } from '../git/git.js';

/** Files above this size are streamed by git add and named, not carried, in patches. */
export const BIG_FILE = 16 * 1024 * 1024;
export const BIG_FILE_CONFIG = `core.bigFileThreshold=${BIG_FILE}`;

export interface RawChange {
  oldMode: string;
  newMode: string;
  oldOid: string;
  newOid: string;
  status: string;
  /** the path as git stores it: bytes, not always UTF-8 */
  path: Buffer;
}

/** `git diff --raw -z --no-abbrev` output as changes. Pure. */
export function parseRawDiff(out: Buffer): RawChange[] {
  const changes: RawChange[] = [];
  let at = 0;
  const next = (): Buffer | undefined => {
    const end = out.indexOf(0, at);
    if (end < 0) return undefined;
    const part = out.subarray(at, end);
    at = end + 1;
    return part;
  };
  for (;;) {
    const meta = next();
    const file = next();
    if (!meta || !file) break;
    const m = meta.toString('latin1').replace(/^:/, '').split(' ');
    if (m.length < 5) continue;
    changes.push({ oldMode: m[0]!, newMode: m[1]!, oldOid: m[2]!, newOid: m[3]!, status: m[4]!, path: Buffer.from(file) });
  }
  return changes;
}

const NULL_OID = /^0+$/;

/** A path as git prints it in a patch header: C-quoted when it holds anything but plain printable ASCII. Pure. */
export function quotePath(p: Buffer): string {
  if (!p.some((b) => b < 0x20 || b >= 0x7f || b === 0x22 || b === 0x5c)) return p.toString('latin1');
  const named: Record<number, string> = { 0x07: '\\a', 0x08: '\\b', 0x09: '\\t', 0x0a: '\\n', 0x0b: '\\v', 0x0c: '\\f', 0x0d: '\\r', 0x22: '\\"', 0x5c: '\\\\' };
  let out = '"';
  for (const b of p) out += named[b] ?? (b < 0x20 || b >= 0x7f ? `\\${b.toString(8).padStart(3, '0')}` : String.fromCharCode(b));
  return `${out}"`;
}

/** The patch text git would print for a binary file it does not show. Pure. */
export function binaryStub(c: RawChange): string {
  const a = quotePath(Buffer.concat([Buffer.from('a/'), c.path]));
  const b = quotePath(Buffer.concat([Buffer.from('b/'), c.path]));
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

/** `git update-index -z --index-info` input that removes these paths from an index. Pure. */
export function removalEntries(paths: Buffer[]): Buffer {
  return Buffer.concat(paths.map((p) => Buffer.concat([Buffer.from(`0 ${'0'.repeat(40)}\t`), p, Buffer.from([0])])));
}

export interface BinaryPatch {
  /** the files over BIG_FILE the patch names without their content, for messages */
  big: string[];
  /** the whole tree the patch is of (with the big files), when it had to be written from an index */
  tree?: string;
}

/**
 * Writes `git diff --binary FROM TO` into `out` (in a directory git's user can
 * write, which also holds a temporary index), files over BIG_FILE named by a
 * stub. `range` is `[from, to]` (commits), or `['--cached', head]` with an
 * index in `call` (what a worktree holds, added to a temporary index).
 */
export async function writeBinaryPatch(git: Git, call: GitCall, range: [string, string], out: string): Promise<BinaryPatch> {
  const c: GitCall = { ...call, config: [...(call.config ?? []), BIG_FILE_CONFIG] };
  const changes = parseRawDiff((await git.run(['diff', '--raw', '-z', '--no-renames', '--no-abbrev', '--no-ext-diff', ...range], c)).stdoutBytes);
  const sizes = await blobSizes(git, c, changes.flatMap((ch) => [ch.oldOid, ch.newOid]).filter((o) => !NULL_OID.test(o)));
  const big = changes.filter((ch) => (sizes.get(ch.oldOid) ?? 0) > BIG_FILE || (sizes.get(ch.newOid) ?? 0) > BIG_FILE);
  const diffFlags = ['diff', '--binary', '--no-ext-diff', '--no-textconv', `--output=${out}`];
  if (big.length === 0) {
    await git.run([...diffFlags, ...range], c);
    return { big: [] };
  }
  // Both sides without their big files, then diffed: entries are only taken out, so nothing else moves
  // (a big file that became a directory leaves the directory's files in the patch).
  const cached = range[0] === '--cached';
  const whole = cached ? await git.out(['write-tree'], c) : `${range[1]}^{tree}`;
  const without = async (tree: string, side: 'old' | 'new', name: string): Promise<string> => {
    const idx = { ...c, indexFile: path.join(path.dirname(out), name) };
    await git.run(['read-tree', tree], idx);
    const gone = big.filter((b) => !NULL_OID.test(side === 'old' ? b.oldOid : b.newOid)).map((b) => b.path);
    await git.run(['update-index', '-z', '--index-info'], { ...idx, input: removalEntries(gone) });
    return git.out(['write-tree'], idx);
  };
  const before = await without(`${cached ? range[1] : range[0]}^{tree}`, 'old', 'index-before');
  const after = await without(whole, 'new', 'index-after');
  await git.run([...diffFlags, before, after], c);
  await pipeline(
    (async function* () {
      for (const b of big) yield binaryStub(b);
    })(),
    createWriteStream(out, { flags: 'a' }),
  );
  return { big: big.map((b) => b.path.toString('utf8')), ...(cached ? { tree: whole } : {}) };
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
