/**
 * A run's diff.patch as a list of the files it changes, each with its
 * counts and where its part of the patch lies, so the dashboard can list a
 * change of hundreds of files and fetch one file's patch at a time (a step
 * that committed a virtualenv makes a patch of 10 MB and more).
 *
 * The patch is read as a stream, line by line, in bytes (offsets must be
 * exact whatever the encoding); only the start of each line is looked at, and
 * a header line is kept whole up to a bound. A file's part starts at its
 * `diff --git` line and runs to the next one.
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import type { RunRecord } from '../run/record.js';
import { readRun, runDir } from '../run/records.js';

export interface DiffFile {
  /** the file's path after the change (before it, for a deleted file) */
  path: string;
  /** where a renamed or copied file came from */
  oldPath?: string;
  status: 'added' | 'deleted' | 'modified' | 'renamed';
  added: number;
  removed: number;
  binary: boolean;
  /** the size of its part of the patch */
  bytes: number;
  /** where that part starts in diff.patch */
  offset: number;
}

export interface DiffIndex {
  files: DiffFile[];
  total: { files: number; added: number; removed: number; bytes: number };
}

/** A header line is kept up to this many bytes: paths are shorter, and a line of content is only looked at for its first byte. */
const HEADER_BOUND = 16 * 1024;

/** Indexes a patch read as a stream of chunks. Pure but for its input. */
export async function indexPatch(chunks: AsyncIterable<Buffer>): Promise<DiffIndex> {
  const files: DiffFile[] = [];
  let cur: (DiffFile & { inHunks: boolean; header: string[] }) | undefined;
  let offset = 0; // of the next byte to read
  let lineStart = 0;
  let head: Buffer[] = []; // the current line's first bytes
  let headLen = 0;

  const finish = (end: number) => {
    if (!cur) return;
    const { inHunks: _h, header, ...f } = cur;
    f.bytes = end - f.offset;
    const named = namesFrom(header);
    files.push({ ...f, ...named.paths, status: named.status ?? f.status });
    cur = undefined;
  };
  const line = (text: Buffer, start: number) => {
    if (text.length === 0) return;
    if (startsWith(text, 'diff --git ')) {
      finish(start);
      cur = { path: '', status: 'modified', added: 0, removed: 0, binary: false, bytes: 0, offset: start, inHunks: false, header: [text.toString('utf8').replace(/\r?\n$/, '')] };
      return;
    }
    if (!cur) return; // anything before the first file (git writes nothing there)
    if (cur.inHunks) {
      const c = text[0];
      if (c === 0x2b /* + */) cur.added++;
      else if (c === 0x2d /* - */) cur.removed++;
      return;
    }
    if (startsWith(text, '@@')) {
      cur.inHunks = true;
      return;
    }
    if (startsWith(text, 'GIT binary patch') || startsWith(text, 'Binary files ')) cur.binary = true;
    if (startsWith(text, 'GIT binary patch')) cur.inHunks = true; // what follows is base85, not lines to count
    if (!cur.binary || startsWith(text, 'Binary files ')) cur.header.push(text.toString('utf8').replace(/\r?\n$/, ''));
  };

  for await (const chunk of chunks) {
    let from = 0;
    for (;;) {
      const nl = chunk.indexOf(0x0a, from);
      const end = nl === -1 ? chunk.length : nl + 1;
      if (headLen < HEADER_BOUND) {
        const piece = chunk.subarray(from, Math.min(end, from + HEADER_BOUND - headLen));
        head.push(piece);
        headLen += piece.length;
      }
      if (nl === -1) break;
      line(head.length === 1 ? head[0]! : Buffer.concat(head), lineStart);
      head = [];
      headLen = 0;
      lineStart = offset + nl + 1;
      from = nl + 1;
    }
    offset += chunk.length;
  }
  if (headLen > 0) line(Buffer.concat(head), lineStart);
  finish(offset);

  const total = { files: files.length, added: 0, removed: 0, bytes: offset };
  for (const f of files) (total.added += f.added), (total.removed += f.removed);
  return { files, total };
}

function startsWith(b: Buffer, s: string): boolean {
  return b.length >= s.length && b.toString('latin1', 0, s.length) === s;
}

/** A file's names and kind from its header lines: rename and copy lines, ---/+++ lines, else its diff --git line. */
function namesFrom(header: string[]): { paths: { path: string; oldPath?: string }; status?: DiffFile['status'] } {
  let from: string | undefined;
  let to: string | undefined;
  let minus: string | null | undefined;
  let plus: string | null | undefined;
  let status: DiffFile['status'] | undefined;
  let copied = false;
  let binary: [string | undefined, string | undefined] | undefined;
  for (const l of header.slice(1)) {
    if (l.startsWith('new file mode')) status = 'added';
    else if (l.startsWith('deleted file mode')) status = 'deleted';
    else if (l.startsWith('rename from ')) (from = unquote(l.slice(12))), (status = 'renamed');
    else if (l.startsWith('rename to ')) to = unquote(l.slice(10));
    else if (l.startsWith('copy from ')) (from = unquote(l.slice(10))), (copied = true);
    else if (l.startsWith('copy to ')) to = unquote(l.slice(8));
    else if (l.startsWith('--- ')) minus = side(l.slice(4));
    else if (l.startsWith('+++ ')) plus = side(l.slice(4));
    else if (l.startsWith('Binary files ')) binary = binarySides(l);
  }
  if (copied) status = 'added';
  const [gitA, gitB] = gitLine(header[0]!);
  // a Binary files line comes last: `Binary files a/x and y and b/x and y differ` splits more than one way
  const oldName = from ?? minus ?? gitA ?? binary?.[0];
  const newName = to ?? plus ?? gitB ?? binary?.[1];
  const p = status === 'deleted' ? (oldName ?? newName) : (newName ?? oldName);
  const moved = from !== undefined && to !== undefined && from !== to;
  return { paths: { path: p ?? '', ...(moved ? { oldPath: from } : {}) }, ...(status ? { status } : {}) };
}

/**
 * The names of `Binary files A and B differ`: a name may hold ` and `, so of
 * the ways to split the line, the one whose sides are one path (or /dev/null
 * and a path) is taken; none, and the names are not known from this line.
 */
function binarySides(l: string): [string | undefined, string | undefined] | undefined {
  const m = /^Binary files (.+) differ$/.exec(l);
  if (!m) return undefined;
  const both = m[1]!;
  for (let at = both.indexOf(' and '); at !== -1; at = both.indexOf(' and ', at + 1)) {
    const a = both.slice(0, at);
    const b = both.slice(at + 5);
    const [sa, sb] = [side(a), side(b)];
    const shaped = (a === '/dev/null' || /^"?a\//.test(a)) && (b === '/dev/null' || /^"?b\//.test(b));
    if (shaped && (sa === null || sb === null || sa === sb)) return [sa ?? undefined, sb ?? undefined];
  }
  return undefined;
}

/** `a/x` → `x`; `/dev/null` → null; a quoted name unquoted. */
function side(name: string): string | null {
  const n = unquote(name.replace(/\t.*$/, ''));
  if (n === '/dev/null') return null;
  return n.replace(/^[ab]\//, '');
}

/** The two names of `diff --git a/X b/Y`: unambiguous when quoted, or when both are the same path (the usual case). */
function gitLine(l: string): [string | undefined, string | undefined] {
  const rest = l.slice('diff --git '.length);
  if (rest.startsWith('"')) {
    const m = /^("(?:[^"\\]|\\.)*") (.+)$/.exec(rest);
    if (m) return [side(m[1]!) ?? undefined, side(m[2]!) ?? undefined];
  }
  // a/P b/P: the line is 2×P + 5 characters
  const half = (rest.length - 5) / 2;
  if (Number.isInteger(half) && rest.startsWith('a/') && rest.slice(2, 2 + half) === rest.slice(half + 5)) {
    const p = rest.slice(2, 2 + half);
    return [p, p];
  }
  const m = / b\/(.*)$/.exec(rest);
  return [undefined, m ? unquote(m[1]!) : undefined];
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, '\\': 92 };

/** A path as git quotes it ("a/caf\303\251") back to its characters; one not quoted as it is. */
export function unquote(s: string): string {
  if (!(s.length >= 2 && s.startsWith('"') && s.endsWith('"'))) return s;
  const bytes: number[] = [];
  const body = s.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const c = body[i]!;
    if (c !== '\\') {
      bytes.push(...Buffer.from(c, 'utf8'));
      continue;
    }
    const n = body[i + 1] ?? '';
    if (/[0-7]/.test(n)) {
      bytes.push(parseInt(body.slice(i + 1, i + 4), 8));
      i += 3;
    } else {
      bytes.push(ESCAPES[n] ?? n.charCodeAt(0));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** The last few indexes, by file and its size and time: a page that lists then opens files reads the patch once. */
const cache = new Map<string, DiffIndex>();
const CACHED = 8;

/** The index of a patch file, read once while it does not change. */
export async function indexFile(file: string): Promise<DiffIndex> {
  const s = await stat(file);
  const key = `${file}\0${s.size}\0${s.mtimeMs}`;
  const hit = cache.get(key);
  if (hit) {
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const index = await indexPatch(createReadStream(file, { highWaterMark: 256 * 1024 }));
  cache.set(key, index);
  while (cache.size > CACHED) cache.delete(cache.keys().next().value!);
  return index;
}

/** A run's diff.patch and its size, or a no_diff error that says why it has none. */
export async function runPatch(runsDir: string, runId: string): Promise<{ file: string; size: number; record: RunRecord }> {
  const record = await readRun(runsDir, runId);
  const file = path.join(runDir(runsDir, runId), 'diff.patch');
  const size = (await stat(file).catch(() => undefined))?.size;
  if (size !== undefined) return { file, size, record };
  const why =
    record.workspace === 'persistent_directory'
      ? "it worked on a persistent directory: its changes are in the record's steps[].changes"
      : record.status === 'not_started' || record.status === 'queued'
        ? 'it never started'
        : record.status === 'running'
          ? 'it is still running'
          : 'it ended before its change was recorded';
  throw new RunnerError('no_diff', `run ${runId} has no diff: ${why}`);
}

/** GET /api/runs/:id/diff/files: the files, without where they lie in the patch (that is the server's business). */
export async function diffFiles(runsDir: string, runId: string): Promise<{ files: Array<Omit<DiffFile, 'offset'>>; total: DiffIndex['total'] }> {
  const { file } = await runPatch(runsDir, runId);
  const index = await indexFile(file);
  return { files: index.files.map(({ offset: _o, ...f }) => f), total: index.total };
}

/** One file's part of the run's patch (its parts, when it has more than one): where it lies, for a read stream; no_diff when the patch has no such file. */
export async function filePatch(runsDir: string, runId: string, name: string): Promise<{ file: string; start: number; end: number; size: number }> {
  const { file } = await runPatch(runsDir, runId);
  const index = await indexFile(file);
  const { files } = index;
  let i = files.findIndex((x) => x.path === name);
  if (i === -1) i = files.findIndex((x) => x.oldPath === name);
  if (i === -1) throw new RunnerError('no_diff', `run ${runId}'s diff has no file ${name} (GET /api/runs/${runId}/diff/files lists them)`);
  // A path can have more than one part, one after the other (a file that became a symlink: its deletion, then its
  // addition): all of them are sent, or asking by path would show the first and hide the rest.
  let last = i;
  while (files[last + 1]?.path === files[i]!.path) last++;
  const start = files[i]!.offset;
  const end = files[last]!.offset + files[last]!.bytes;
  return { file, start, end: end - 1, size: end - start };
}
