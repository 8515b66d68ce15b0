/**
 * What a run touched in a worktree, from the inodes alone: an entry whose
 * change time is after the worktree was handed to the run (its content, mode,
 * owner, links, extended attributes or ACLs changed, or it is new), or whose
 * access time is (it was read: a step could mark files that way), was
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
  /** a read after the last write moves it (relatime): a step could mark files by reading them */
  atimeMs: number;
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
  // `since` is a change time the runner read from the same file system, so equal counts (a coarse clock)
  if (e.ctimeMs >= since) return true;
  // (a directory's access time moves with every listing, the runner's own included: no mark a step alone makes)
  if (e.type !== 'dir' && e.atimeMs >= since) return true;
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
    // under a directory that goes whole: it goes with it (parents come first, so the parent says)
    if (e.rel !== '' && removed.has(parentOf(e.rel))) {
      removed.add(e.rel);
      continue;
    }
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

function depth(rel: string): number {
  return rel === '' ? 0 : rel.split('/').length;
}
