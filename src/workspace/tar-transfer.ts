/**
 * A workspace as a tar stream, both ways, for an engine whose nodes cannot
 * see the runner's disk (swarm). Out: the tree as it is, symlinks as
 * symlinks, its own `.git` never. Back: what a hostile step sends, with tar-fs
 * (>= 3.1.1, whose extraction refuses to write through a symlink): into an
 * empty directory, files, directories and symlinks only (no device, FIFO or
 * hard link), no path outside it, nothing under a symlink the archive made,
 * no set-id bits, owned by the workspace's owner, within a size and an entry
 * count; what is refused is named. A `.git` at the top goes out only as the
 * copy of the history the runner made for the step (git-copy.ts), never the
 * worktree's own, and what comes back there is dropped unnamed.
 */
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-fs';

export interface ReceiveLimits {
  maxBytes: number;
  maxEntries: number;
}

export const DEFAULT_RECEIVE_LIMITS: ReceiveLimits = { maxBytes: 4 * 1024 ** 3, maxEntries: 1_000_000 };

export interface ReceiveReport {
  entries: number;
  bytes: number;
  /** `path: why`, the first 100 */
  refused: string[];
}

export class TransferTooBig extends Error {}

/**
 * The tree under `dir` as a tar stream: its own `.git` at its top left out, symlinks not followed, sockets and devices
 * skipped. `gitDir`: a directory sent as the tree's `.git` instead (the step's copy of the history, git-copy.ts).
 */
export function packTree(dir: string, gitDir?: string): Readable {
  const then = gitDir
    ? (pack: unknown) =>
        tar.pack(gitDir, {
          pack,
          map: (header: { name: string }) => ({ ...header, name: header.name === '.' ? '.git' : `.git/${header.name}` }),
          umask: 0,
        } as unknown as tar.PackOptions)
    : undefined;
  return tar.pack(dir, {
    ignore: (name: string) => isDotGit(path.relative(dir, name).split(path.sep)),
    // the runner's umask must not change what the step sees
    umask: 0,
    ...(then ? { finalize: false, finish: then } : {}),
  } as tar.PackOptions) as unknown as Readable;
}

/** A path's parts (no `.`, no empty ones) name the tree's top-level `.git` or something under it. Pure. */
function isDotGit(parts: readonly string[]): boolean {
  const p = parts.filter((x) => x !== '' && x !== '.');
  return p[0] === '.git';
}

/**
 * What comes back under the top-level `.git` is the copy the runner sent (git-copy.ts), whatever the step made of
 * it: dropped without a word, never written. Anything else there may be is judged by entryProblem. Pure.
 */
export function droppedQuietly(name: string): boolean {
  if (name.startsWith('/') || name.includes('\0')) return false;
  const parts = name.split('/');
  return !parts.includes('..') && isDotGit(parts);
}

/** Why an archive entry is refused, or undefined. Pure. */
export function entryProblem(name: string, type: string | null | undefined, symlinks: ReadonlySet<string>): string | undefined {
  if (type !== 'file' && type !== 'directory' && type !== 'symlink') return `a ${type ?? 'strange'} entry (only files, directories and symlinks come back)`;
  if (name.startsWith('/') || name.includes('\0')) return 'an absolute path';
  const parts = name.split('/').filter((p) => p !== '' && p !== '.');
  if (!parts.length) return undefined;
  if (parts.includes('..')) return 'a path with ..';
  if (parts[0] === '.git') return '.git never comes back';
  for (let i = 1; i < parts.length; i++) if (symlinks.has(parts.slice(0, i).join('/'))) return `under ${parts.slice(0, i).join('/')}, a symlink`;
  return undefined;
}

/** Extracts a step's tar into `dest` (created, and empty), owned by `owner`. Throws TransferTooBig past the limits. */
export async function receiveTree(src: Readable, dest: string, owner: { uid: number; gid: number }, limits: ReceiveLimits = DEFAULT_RECEIVE_LIMITS): Promise<ReceiveReport> {
  await mkdir(dest, { recursive: false, mode: 0o755 });
  if ((await readdir(dest)).length) throw new Error(`${dest} is not empty`);
  const report: ReceiveReport = { entries: 0, bytes: 0, refused: [] };
  const symlinks = new Set<string>();
  let tooBig: string | undefined;
  const extract = tar.extract(dest, {
    ignore: (_abs: string, header?: { name: string; type?: string | null; size?: number }) => {
      if (!header || tooBig) return true;
      const name = header.name.replace(/\/+$/, '');
      if (droppedQuietly(name)) return true;
      const problem = entryProblem(name, header.type, symlinks);
      if (problem) {
        if (report.refused.length < 100) report.refused.push(`${name.slice(0, 300)}: ${problem}`);
        return true;
      }
      report.entries++;
      report.bytes += header.size ?? 0;
      if (report.entries > limits.maxEntries) tooBig ??= `more than ${limits.maxEntries} entries`;
      if (report.bytes > limits.maxBytes) tooBig ??= `more than ${limits.maxBytes} bytes`;
      // past a limit nothing more is written (the stream is read to its end: the sender caps its length)
      if (tooBig) return true;
      if (header.type === 'symlink') symlinks.add(name.split('/').filter((p) => p !== '' && p !== '.').join('/'));
      return false;
    },
    map: (header: { mode?: number; uid?: number; gid?: number }) => {
      header.mode = (header.mode ?? 0o644) & 0o777;
      header.uid = owner.uid;
      header.gid = owner.gid;
      return header;
    },
    umask: 0,
    // a symlink is data (committed as a symlink), whatever it points at; nothing is written through one
    validateSymlinks: false,
    strict: true,
  } as unknown as tar.ExtractOptions);
  await pipeline(src, extract as unknown as NodeJS.WritableStream);
  if (tooBig) throw new TransferTooBig(`the step's work is too big to take back: ${tooBig}`);
  return report;
}

/** Makes `worktree` hold what `staged` holds: everything but its `.git` goes, the staged entries move in. */
export async function replaceTree(worktree: string, staged: string): Promise<void> {
  for (const name of await readdir(worktree)) {
    if (name !== '.git') await rm(path.join(worktree, name), { recursive: true, force: true });
  }
  for (const name of await readdir(staged)) {
    if (name === '.git') continue;
    await rename(path.join(staged, name), path.join(worktree, name));
  }
  await rm(staged, { recursive: true, force: true });
}
