/**
 * What a directory holds, for telling what a step changed in a workspace that
 * is not a git repository. The walk never follows a symlink and never reads
 * outside the directory: files are opened with O_NOFOLLOW, symlinks are
 * recorded by their target text. A file whose size, mtime, ctime and inode are
 * as before keeps its hash without being read again.
 */
import { createHash } from 'node:crypto';
import { lstat, readdir, readlink } from 'node:fs/promises';
import path from 'node:path';
import { fileSha } from '../common/file-sha.js';

export interface Entry {
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  /** sha256 of a file's content, or of a symlink's target text */
  sha256?: string;
  /** a symlink's target, as text */
  target?: string;
  mtimeMs: number;
  /** a process can set mtime back, never ctime */
  ctimeMs: number;
  ino: number;
}

export type Snapshot = Map<string, Entry>;

export interface Change {
  path: string;
  type: Entry['type'];
  size: number;
  sha256?: string;
  target?: string;
}

export interface ChangeList {
  added: Change[];
  modified: Change[];
  deleted: Change[];
  /** set when the lists above were cut to keep the record small: how many there are in all, and where the whole list is */
  cut?: { added: number; modified: number; deleted: number; file: string };
}

/** How many changes a run record lists per step; the whole list goes to a file of its own. */
export const MAX_RECORDED_CHANGES = 1000;

export function changeCount(c: ChangeList): number {
  return c.added.length + c.modified.length + c.deleted.length;
}

/** The first `max` changes (added first, then modified, then deleted), with the counts of all and where they are. Pure. */
export function cutChanges(c: ChangeList, max: number, file: string): ChangeList {
  if (changeCount(c) <= max) return c;
  const added = c.added.slice(0, max);
  const modified = c.modified.slice(0, max - added.length);
  const deleted = c.deleted.slice(0, max - added.length - modified.length);
  return { added, modified, deleted, cut: { added: c.added.length, modified: c.modified.length, deleted: c.deleted.length, file } };
}

/** Added, modified and deleted counts, whether or not the lists were cut. Pure. */
export function changeCounts(c: ChangeList): { added: number; modified: number; deleted: number } {
  return c.cut ? { added: c.cut.added, modified: c.cut.modified, deleted: c.cut.deleted } : { added: c.added.length, modified: c.modified.length, deleted: c.deleted.length };
}

export async function takeSnapshot(root: string, previous?: Snapshot): Promise<Snapshot> {
  const snap: Snapshot = new Map();
  const visit = async (rel: string): Promise<void> => {
    const names = await readdir(path.join(root, rel)).catch(() => [] as string[]);
    for (const name of names.sort()) {
      const relPath = rel ? `${rel}/${name}` : name;
      const abs = path.join(root, relPath);
      const st = await lstat(abs).catch(() => undefined);
      if (!st) continue;
      const base = { size: st.size, mtimeMs: st.mtimeMs, ctimeMs: st.ctimeMs, ino: st.ino };
      if (st.isSymbolicLink()) {
        const target = await readlink(abs).catch(() => '');
        snap.set(relPath, { type: 'symlink', ...base, target, sha256: sha(target) });
      } else if (st.isDirectory()) {
        snap.set(relPath, { type: 'dir', ...base, size: 0 });
        await visit(relPath);
      } else if (st.isFile()) {
        const before = previous?.get(relPath);
        const same =
          before?.type === 'file' && before.size === st.size && before.mtimeMs === st.mtimeMs && before.ctimeMs === st.ctimeMs && before.ino === st.ino;
        const hash = same ? before.sha256 : await fileSha(abs);
        snap.set(relPath, { type: 'file', ...base, ...(hash ? { sha256: hash } : {}) });
      } else {
        snap.set(relPath, { type: 'other', ...base });
      }
    }
  };
  await visit('');
  return snap;
}

/** Added, modified and deleted entries between two snapshots (directories only when added or deleted). Pure. */
export function diffSnapshots(before: Snapshot, after: Snapshot): ChangeList {
  const out: ChangeList = { added: [], modified: [], deleted: [] };
  const describe = (p: string, e: Entry): Change => ({
    path: p,
    type: e.type,
    size: e.size,
    ...(e.sha256 ? { sha256: e.sha256 } : {}),
    ...(e.target !== undefined ? { target: e.target } : {}),
  });
  for (const [p, e] of after) {
    const b = before.get(p);
    if (!b) out.added.push(describe(p, e));
    else if (b.type !== e.type || (e.type !== 'dir' && (b.sha256 !== e.sha256 || b.size !== e.size))) out.modified.push(describe(p, e));
  }
  for (const [p, e] of before) if (!after.has(p)) out.deleted.push(describe(p, e));
  return out;
}


function sha(s: string): string {
  return createHash('sha256').update(s).digest('hex');
}

