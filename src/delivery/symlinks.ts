/**
 * With delivery.paths, a symlink the change adds or alters must lead inside
 * them, as the kernel would resolve it in the checkout: following every
 * symlink on the way (`src/self -> .` then `src/root -> self/..` is the
 * repository's root), never absolute, never out of the repository, never into
 * `.git`. Paths and targets are read as bytes from git's objects (never from a
 * checkout); one that is not UTF-8 cannot be checked and is refused.
 */
import picomatch from 'picomatch';
import { visible } from '../common/visible.js';
import type { Git } from '../git/git.js';
import type { RunRecord } from '../run/record.js';
import type { ProjectFacts } from '../workspace/project.js';
import { parseRawDiff } from '../workspace/patch-file.js';
import { DeliveryRefused } from './refusal.js';

export interface Symlink {
  path: string;
  target: string;
  /** false when its path or target is not UTF-8 */
  readable: boolean;
}

/** As the kernel does: 40 links followed in one resolution at most. */
const MAX_HOPS = 40;

/**
 * Where `target`, read in directory `dir` (repository-relative components),
 * leads, following the repository's symlinks; undefined when it leaves the
 * repository or loops. Pure.
 */
export function resolveLink(dir: string[], target: string, links: ReadonlyMap<string, string>, hops = { n: 0 }): string[] | undefined {
  if (target.startsWith('/')) return undefined;
  let cur = [...dir];
  for (const part of target.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (cur.length === 0) return undefined;
      cur.pop();
      continue;
    }
    cur.push(part);
    const next = links.get(cur.join('/'));
    if (next !== undefined) {
      if (++hops.n > MAX_HOPS) return undefined;
      const to = resolveLink(cur.slice(0, -1), next, links, hops);
      if (!to) return undefined;
      cur = to;
    }
  }
  return cur;
}

/** Throws scope_violation for each changed symlink that leads outside delivery.paths. Pure. */
export function checkSymlinks(rec: RunRecord, changed: Symlink[], all: ReadonlyMap<string, string>): void {
  const globs = rec.deliveryRules.paths;
  if (!globs || !changed.length) return;
  const allowed = picomatch(globs, { dot: true });
  const escapes = changed.filter((l) => {
    if (!l.readable) return true;
    const to = resolveLink(l.path.split('/').slice(0, -1), l.target, all);
    return !to || to.length === 0 || to.includes('.git') || !allowed(to.join('/'));
  });
  if (escapes.length) {
    const shown = escapes.slice(0, 10).map((l) => `${visible(l.path)} -> ${visible(l.target)}`);
    throw new DeliveryRefused(
      'scope_violation',
      `the change has symlinks that lead outside delivery.paths (${globs.join(', ')}): ${shown.join(', ')}${escapes.length > 10 ? ` and ${escapes.length - 10} more` : ''}; review the run's diff (runner diff ${rec.runId})`,
      escapes.map((l) => l.path),
    );
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });
function text(b: Buffer): string | undefined {
  try {
    return utf8.decode(b);
  } catch {
    return undefined;
  }
}

/** The symlinks `from..to` adds or alters, and every symlink of `to` (to resolve them through). */
export async function readSymlinks(git: Git, project: ProjectFacts, from: string, to: string): Promise<{ changed: Symlink[]; all: Map<string, string> }> {
  const call = { cwd: project.root, gitDir: project.commonDir };
  const changedPaths = parseRawDiff((await git.run(['diff', '--raw', '-z', '--no-renames', '--no-abbrev', from, to], call)).stdoutBytes)
    .filter((c) => c.newMode === '120000')
    .map((c) => c.path);
  if (!changedPaths.length) return { changed: [], all: new Map() };
  // every symlink in the tree: "<mode> <type> <oid>\t<path>\0"
  const listing = (await git.run(['ls-tree', '-r', '-z', '--full-tree', to], call)).stdoutBytes;
  const entries: Array<{ oid: string; path: Buffer }> = [];
  for (let at = 0; at < listing.length; ) {
    const end = listing.indexOf(0, at);
    if (end < 0) break;
    const tab = listing.indexOf(0x09, at);
    const [mode, , oid] = listing.subarray(at, tab).toString('latin1').split(' ');
    if (mode === '120000' && oid) entries.push({ oid, path: Buffer.from(listing.subarray(tab + 1, end)) });
    at = end + 1;
  }
  const targets = await blobs(git, call, entries.map((e) => e.oid));
  const all = new Map<string, string>();
  const read = entries.map((e) => {
    const p = text(e.path);
    const t = targets.get(e.oid);
    const target = t ? text(t) : undefined;
    if (p !== undefined && target !== undefined) all.set(p, target);
    return { key: e.path, path: p ?? e.path.toString('utf8'), target: target ?? (t ?? Buffer.alloc(0)).toString('utf8'), readable: p !== undefined && target !== undefined };
  });
  const changed = changedPaths.map((cp) => {
    const found = read.find((r) => r.key.equals(cp));
    return found ? { path: found.path, target: found.target, readable: found.readable } : { path: cp.toString('utf8'), target: '', readable: false };
  });
  return { changed, all };
}

/** Blob contents by id, read as bytes: "<oid> blob <size>\n<content>\n" each. */
async function blobs(git: Git, call: { cwd: string; gitDir: string }, oids: string[]): Promise<Map<string, Buffer>> {
  const found = new Map<string, Buffer>();
  if (!oids.length) return found;
  const out = (await git.run(['cat-file', '--batch'], { ...call, input: `${[...new Set(oids)].join('\n')}\n` })).stdoutBytes;
  for (let at = 0; at < out.length; ) {
    const nl = out.indexOf(0x0a, at);
    if (nl < 0) break;
    const [oid, type, size] = out.subarray(at, nl).toString('latin1').split(' ');
    const n = Number(size);
    if (type !== 'blob' || !Number.isInteger(n)) break;
    found.set(oid!, Buffer.from(out.subarray(nl + 1, nl + 1 + n)));
    at = nl + 1 + n + 1;
  }
  return found;
}

/** The delivery guard: with delivery.paths, read the change's symlinks and check where they lead. */
export async function guardSymlinks(git: Git, project: ProjectFacts, rec: RunRecord, from: string, to: string): Promise<void> {
  if (!rec.deliveryRules.paths) return;
  const links = await readSymlinks(git, project, from, to);
  checkSymlinks(rec, links.changed, links.all);
}
