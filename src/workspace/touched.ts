/**
 * What a run touched in a worktree, from the inodes alone: an entry whose
 * change time is after the worktree was handed to the run (its content, mode,
 * owner, links, extended attributes or ACLs changed, or it is new) was
 * touched; so was one git would not have written (another owner, a second
 * hard link, a FIFO, a socket, a device). A change time cannot be set back by
 * anyone but the kernel's clock, so what is untouched is exactly what the
 * runner's own checkout wrote. Deciding here is pure; worktree-pool.ts acts.
 */

export interface EntryFacts {
  /** relative to the worktree, '' for the worktree itself */
  rel: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  ctimeMs: number;
  uid: number;
  gid: number;
  nlink: number;
}

export interface Cleanup {
  /** touched entries to remove whole (files, symlinks, others, and directories with nothing untouched under them) */
  remove: string[];
  /** touched directories holding untouched entries: made anew (a fresh inode, its untouched entries moved in), deepest first */
  renew: string[];
}

export function touchedBy(e: EntryFacts, since: number, owner: { uid: number; gid: number }): boolean {
  if (e.ctimeMs > since) return true;
  if (e.type === 'other') return true;
  if (e.uid !== owner.uid || e.gid !== owner.gid) return true;
  return e.type === 'file' && e.nlink !== 1;
}

/** What to remove and what to renew, given every entry of the tree (parents before children, as a walk lists them). */
export function planCleanup(entries: EntryFacts[], since: number, owner: { uid: number; gid: number }): Cleanup {
  const touched = new Set(entries.filter((e) => touchedBy(e, since, owner)).map((e) => e.rel));
  // a directory that keeps something untouched under it is renewed, not removed
  const keepsSomething = new Set<string>();
  for (const e of entries) {
    if (touched.has(e.rel) || e.rel === '') continue;
    for (let d = parentOf(e.rel); ; d = parentOf(d)) {
      if (keepsSomething.has(d)) break;
      keepsSomething.add(d);
      if (d === '') break;
    }
  }
  const remove: string[] = [];
  const renew: string[] = [];
  const removed = new Set<string>();
  for (const e of entries) {
    if (!touched.has(e.rel)) continue;
    // under a directory that goes whole: it goes with it
    if (e.rel !== '' && [...ancestors(e.rel)].some((a) => removed.has(a))) continue;
    // the worktree itself is never removed, only renewed
    if (e.type === 'dir' && (keepsSomething.has(e.rel) || e.rel === '')) renew.push(e.rel);
    else {
      remove.push(e.rel);
      removed.add(e.rel);
    }
  }
  renew.sort((a, b) => depth(b) - depth(a));
  return { remove, renew };
}

function parentOf(rel: string): string {
  const i = rel.lastIndexOf('/');
  return i < 0 ? '' : rel.slice(0, i);
}

function* ancestors(rel: string): Generator<string> {
  for (let d = parentOf(rel); ; d = parentOf(d)) {
    yield d;
    if (d === '') return;
  }
}

function depth(rel: string): number {
  return rel === '' ? 0 : rel.split('/').length;
}
