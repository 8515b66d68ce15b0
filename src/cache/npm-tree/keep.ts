/**
 * After a step the runner trusts to write caches (write-trust.ts): the installed tree npm made in it is kept for
 * the project, under the key the shim computed, when the step's mark says npm installed and the lockfile,
 * package.json and .npmrc in the workspace are still the ones it installed from. The copy is the runner's, made on
 * the host into a directory no step can write (steps get it read-only), and only the newest few are kept.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, rename, stat, statfs } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { writeFileAtomic } from '../../common/atomic-write.js';
import { fileSha as sha } from '../../common/file-sha.js';
import { formatSize } from '../../common/durations.js';
import { errorMessage } from '../../common/errors.js';
import { readOutputsFile } from '../../run/outputs.js';
import { MARK_FILE } from './files.js';
import { removeTree } from '../../workspace/remove-tree.js';

/** installed trees a project keeps (the newest; a tree of 700 packages is about 150 MB) */
export const TREES_KEPT = 3;

/** a tree bigger than this, or with more entries, is not kept (a step could fill the disk through it) */
export const MAX_TREE_BYTES = 2 * 1024 ** 3;
export const MAX_TREE_ENTRIES = 400_000;
/** what the disk must keep free after the copy: bytes, and a share of the disk */
export const MIN_FREE = { bytes: 2 * 1024 ** 3, ratio: 0.1 };
/** cp -a of a tree at its bound on a slow disk takes minutes, not hours */
const COPY_TIMEOUT_MS = 15 * 60_000;

export interface TreeMark {
  key: string;
  mode: 'lockfile' | 'manifest';
  lockfile: string | null;
  lockSha: string | null;
  pkgSha: string;
  npmrcSha: string | null;
  /** npm's own record of the tree it installed (node_modules/.package-lock.json), right after the install */
  treeSha: string | null;
}

const HEX = /^[0-9a-f]{64}$/;
/** a mark is a few hundred bytes */
const MARK_MAX = 4096;

/** The shim's mark, when it is one (a step's file: read bounded, every field checked). Pure. */
export function parseMark(text: string): TreeMark | undefined {
  let m: Partial<TreeMark>;
  try {
    m = JSON.parse(text) as Partial<TreeMark>;
  } catch {
    return undefined;
  }
  if (typeof m !== 'object' || m === null) return undefined;
  if (typeof m.key !== 'string' || !HEX.test(m.key)) return undefined;
  if (m.mode !== 'lockfile' && m.mode !== 'manifest') return undefined;
  if (m.lockfile !== null && m.lockfile !== 'package-lock.json' && m.lockfile !== 'npm-shrinkwrap.json') return undefined;
  if ((m.mode === 'lockfile') !== (m.lockfile !== null)) return undefined;
  // the shim writes the lockfile's sha with its name: without it, a missing (or linked) lockfile would match
  if ((m.lockfile !== null) !== (typeof m.lockSha === 'string')) return undefined;
  for (const s of [m.lockSha, m.npmrcSha, m.treeSha]) if (s !== null && (typeof s !== 'string' || !HEX.test(s))) return undefined;
  if (typeof m.pkgSha !== 'string' || !HEX.test(m.pkgSha)) return undefined;
  if (m.treeSha === undefined) return undefined;
  return m as TreeMark;
}

/** The sha of a regular file of the workspace (common/file-sha.ts), null when there is none or it cannot be read. */
async function fileSha(file: string): Promise<string | null> {
  return (await sha(file).catch(() => undefined)) ?? null;
}

/** `du -s` of a directory (symlinks not followed): its bytes, or its entries with `--inodes`. */
async function du(dir: string, what: '-b' | '--inodes'): Promise<number> {
  const { stdout } = await promisify(execFile)('du', ['-s', what, dir], { timeout: COPY_TIMEOUT_MS });
  return Number(stdout.split('\t')[0]) || 0;
}

/** Why a tree of this size may not be kept here, or undefined. Pure. */
export function tooBig(tree: { bytes: number; entries: number }, disk: { freeBytes: number; totalBytes: number }, minFree = MIN_FREE): string | undefined {
  if (tree.bytes > MAX_TREE_BYTES) return `it holds ${formatSize(tree.bytes)}, over the ${formatSize(MAX_TREE_BYTES)} a kept tree may`;
  if (tree.entries > MAX_TREE_ENTRIES) return `it holds ${tree.entries} entries, over the ${MAX_TREE_ENTRIES} a kept tree may`;
  const left = disk.freeBytes - tree.bytes;
  if (left < minFree.bytes || left < minFree.ratio * disk.totalBytes) {
    return `the disk would keep ${formatSize(Math.max(0, left))} free after it (a kept tree leaves at least ${formatSize(minFree.bytes)} and ${Math.round(minFree.ratio * 100)}% of the disk)`;
  }
  return undefined;
}

export interface KeepInput {
  ioDir: string;
  workspace: string;
  /** the workspace outlives runs (a persistent directory): no tree is kept from it */
  persistent?: boolean;
  trees: string;
  runId: string;
  step: string;
  now: () => Date;
  /** what the disk keeps free after a copy (MIN_FREE) */
  minFree?: typeof MIN_FREE;
}

/** Keeps the step's installed tree when its mark says so; returns what the step's log says (nothing when there was no install). */
export async function keepTree(o: KeepInput): Promise<string | undefined> {
  // the step's file: never through a link, never a FIFO or a device, never more than a mark's size
  const read = await readOutputsFile(path.join(o.ioDir, MARK_FILE), 'the mark', MARK_MAX);
  if (read.text === undefined && read.problem === undefined) return undefined;
  const mark = read.problem === undefined ? parseMark(read.text!) : undefined;
  if (!mark) return 'cache npm: the install left a mark the runner cannot read: its tree is not kept';
  if (o.persistent) {
    // npm install keeps what node_modules held (an earlier run's files among them); npm ci starts from none, but the
    // step goes on to run the directory's scripts and tests, which an earlier run's agent may have rewritten to change
    // node_modules after npm installed it (its record of the tree unchanged); the mark is the step's own word, too
    return "cache npm: a persistent directory keeps no installed tree: what the step runs there (its tests, its scripts) is what earlier runs left, their agents' work among them, and may change node_modules after npm installed it";
  }
  const ws = o.workspace;
  const now = {
    lockSha: mark.lockfile ? await fileSha(path.join(ws, mark.lockfile)) : null,
    pkgSha: await fileSha(path.join(ws, 'package.json')),
    npmrcSha: await fileSha(path.join(ws, '.npmrc')),
  };
  if (now.lockSha !== mark.lockSha || now.pkgSha !== mark.pkgSha || now.npmrcSha !== mark.npmrcSha) {
    return `cache npm: ${mark.lockfile ?? 'package.json'} changed after npm installed: the installed tree is not kept`;
  }
  const from = path.join(ws, 'node_modules');
  const st = await lstat(from).catch(() => undefined);
  if (!st?.isDirectory()) return 'cache npm: npm installed, but the step left no node_modules: nothing to keep';
  // (read once node_modules is known a directory, not a link) npm changed the tree after the install (npm prune --omit=dev, uninstall, update, dedupe): it is not the key's
  if ((await fileSha(path.join(from, '.package-lock.json'))) !== mark.treeSha) {
    return 'cache npm: node_modules changed after npm installed (npm prune, uninstall, update or the like): the installed tree is not kept';
  }
  const dest = path.join(o.trees, mark.key);
  if (await stat(dest).catch(() => undefined)) return undefined;
  await mkdir(o.trees, { recursive: true, mode: 0o755 });
  const disk = await statfs(o.trees);
  const big = tooBig(
    { bytes: await du(from, '-b'), entries: await du(from, '--inodes') },
    { freeBytes: disk.bavail * disk.bsize, totalBytes: disk.blocks * disk.bsize },
    o.minFree,
  );
  if (big) return `cache npm: the installed tree is not kept: ${big}`;
  const tmp = path.join(o.trees, `.new-${mark.key.slice(0, 16)}-${process.pid}-${Date.now()}`);
  try {
    await mkdir(tmp, { mode: 0o755 });
    // cp -a: symlinks as symlinks (.bin's, a file: dependency's), modes and times as npm left them
    await promisify(execFile)('cp', ['-a', from, path.join(tmp, 'node_modules')], { maxBuffer: 1024 * 1024, timeout: COPY_TIMEOUT_MS });
    const bytes = await du(tmp, '-b');
    await writeFileAtomic(path.join(tmp, 'meta.json'), `${JSON.stringify({ createdAt: o.now().toISOString(), run: o.runId, step: o.step, mode: mark.mode, lockfile: mark.lockfile, sizeBytes: bytes })}\n`);
    try {
      await rename(tmp, dest);
    } catch {
      // another run kept the same tree first
      await removeTree(tmp);
      return undefined;
    }
    const dropped = await pruneTrees(o.trees, TREES_KEPT);
    return `cache npm: kept the installed tree of this ${mark.lockfile ?? 'package.json (no lockfile: used for 24 h)'} (${formatSize(bytes)}): the next npm ${mark.mode === 'lockfile' ? 'ci' : 'install'} of it restores it${dropped ? `; ${dropped} older tree${dropped === 1 ? '' : 's'} removed (a project keeps ${TREES_KEPT})` : ''}`;
  } catch (err) {
    await removeTree(tmp).catch(() => undefined);
    return `cache npm: could not keep the installed tree: ${errorMessage(err)}`;
  }
}

/** Removes all but the newest `keep` trees (and copies left half made); returns how many trees went. */
export async function pruneTrees(trees: string, keep: number): Promise<number> {
  const names = await readdir(trees).catch(() => [] as string[]);
  const kept: Array<{ name: string; at: number }> = [];
  for (const name of names) {
    if (name.startsWith('.new-')) {
      const st = await stat(path.join(trees, name)).catch(() => undefined);
      // another run's copy in progress is young; one a crash left is removed an hour on
      if (st && Date.now() - st.mtimeMs > 3600_000) await removeTree(path.join(trees, name));
      continue;
    }
    if (!HEX.test(name)) continue;
    const meta = await readFile(path.join(trees, name, 'meta.json'), 'utf8').then((t) => JSON.parse(t) as { createdAt?: string }).catch(() => undefined);
    kept.push({ name, at: Date.parse(meta?.createdAt ?? '') || 0 });
  }
  kept.sort((a, b) => b.at - a.at);
  const gone = kept.slice(keep);
  // removeTree: a tree whose directories npm left without write permission (0555) goes too when the runner is not root
  for (const g of gone) await removeTree(path.join(trees, g.name));
  return gone.length;
}
