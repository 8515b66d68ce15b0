/**
 * The project's files a dev container's preparation reads (its devcontainer.json, Dockerfile, build context and
 * local features), read as hostile: never through a symlink, never outside the project, size-capped. A build's
 * context becomes a tar whose symlinks stay symlinks (as `docker build` sends them): nothing of the host's beyond the
 * project enters an image. Also the hash of the files that matter, the preparation's key.
 */
import { createHash } from 'node:crypto';
import { constants, createReadStream } from 'node:fs';
import { lstat, open, readdir, readlink, realpath } from 'node:fs/promises';
import path from 'node:path';
import picomatch from 'picomatch';
import tar from 'tar-stream';
import { ContainerError } from '../../common/errors.js';

/** No devcontainer.json, Dockerfile or feature metadata is this long. */
export const MAX_CONFIG_FILE = 1024 * 1024;

/** `rel` resolved inside `root`, or a refusal naming it: the dev container reads nothing outside its project. */
export async function insideProject(root: string, rel: string, what: string): Promise<string> {
  const abs = path.resolve(root, rel);
  const up = path.relative(root, abs);
  if (up.startsWith('..') || path.isAbsolute(up)) throw new ContainerError('devcontainer_invalid', `${what} ${rel} is outside the project (${root}): a dev container reads only the project's own files`);
  // no directory on the way may be a link elsewhere
  const realRoot = await realpath(root);
  // the project itself (a build context of ".." from .devcontainer): its parent is no directory on the way
  if (up === '') return realRoot;
  const realDir = await realpath(path.dirname(abs)).catch(() => undefined);
  if (realDir === undefined) throw new ContainerError('devcontainer_invalid', `${what} ${rel} does not exist in the project (${root})`);
  const rest = path.relative(realRoot, realDir);
  if (rest.startsWith('..') || path.isAbsolute(rest)) throw new ContainerError('devcontainer_invalid', `${what} ${rel} is reached through a symbolic link that leaves the project: refused`);
  const out = path.join(realDir, path.basename(abs));
  // nor the last: a build context or a feature's folder that is a link would be read (and sent to the engine) where it points
  if ((await lstat(out).catch(() => undefined))?.isSymbolicLink()) throw new ContainerError('devcontainer_invalid', `${what} ${rel} is a symbolic link, which is never followed: refused`);
  return out;
}

/** A small file of the project, never through a symlink. */
export async function readProjectFile(abs: string, what: string): Promise<string> {
  let fh;
  try {
    fh = await open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new ContainerError('devcontainer_invalid', `cannot read ${what} ${abs}: ${code === 'ELOOP' ? 'it is a symbolic link, which is never followed' : code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new ContainerError('devcontainer_invalid', `${what} ${abs} is not a regular file`);
    if (st.size > MAX_CONFIG_FILE) throw new ContainerError('devcontainer_invalid', `${what} ${abs} is ${st.size} bytes; at most ${MAX_CONFIG_FILE}`);
    return await fh.readFile('utf8');
  } finally {
    await fh.close();
  }
}

export interface ContextEntry {
  /** relative to the context, with / */
  rel: string;
  kind: 'file' | 'dir' | 'symlink';
  mode: number;
  size: number;
  /** a symlink's target, as it is written (never followed) */
  link?: string;
}

/** Every entry of `dir` (lstat: links are not followed), without .git and what .dockerignore leaves out. */
export async function listContext(dir: string): Promise<ContextEntry[]> {
  const ignored = await dockerignore(dir);
  const out: ContextEntry[] = [];
  const walk = async (rel: string): Promise<void> => {
    const names = (await readdir(path.join(dir, rel))).sort();
    for (const name of names) {
      const r = rel ? `${rel}/${name}` : name;
      if (r === '.git' || ignored(r)) continue;
      const st = await lstat(path.join(dir, r));
      if (st.isSymbolicLink()) out.push({ rel: r, kind: 'symlink', mode: st.mode & 0o7777, size: 0, link: await readlink(path.join(dir, r)) });
      else if (st.isDirectory()) {
        out.push({ rel: r, kind: 'dir', mode: st.mode & 0o7777, size: 0 });
        await walk(r);
      } else if (st.isFile()) out.push({ rel: r, kind: 'file', mode: st.mode & 0o7777, size: st.size });
    }
  };
  await walk('');
  return out;
}

/** .dockerignore's patterns (with ! exceptions) as a test of a relative path; a directory left out leaves out what it holds. */
async function dockerignore(dir: string): Promise<(rel: string) => boolean> {
  const text = await readProjectFile(path.join(dir, '.dockerignore'), '.dockerignore').catch(() => '');
  const rules = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l && !l.startsWith('#'))
    .map((l) => ({ negate: l.startsWith('!'), match: picomatch(l.replace(/^!/, '').replace(/^\/+|\/+$/g, '') || '.', { dot: true }) }));
  if (!rules.length) return () => false;
  return (rel) => {
    const parts = rel.split('/');
    let out = false;
    for (const r of rules) {
      const hit = parts.some((_, i) => r.match(parts.slice(0, i + 1).join('/')));
      if (hit) out = !r.negate;
    }
    return out;
  };
}

/** Whether `rel` is one of `sources` (COPY/ADD patterns) or inside one. */
export function matchesSources(rel: string, sources: readonly string[]): boolean {
  if (sources.includes('.')) return true;
  const parts = rel.split('/');
  return sources.some((s) => {
    const m = picomatch(s, { dot: true });
    return parts.some((_, i) => m(parts.slice(0, i + 1).join('/')));
  });
}

/** Adds the entries' names, kinds, modes and contents (files read without following links) to `hash`. */
export async function hashEntries(hash: ReturnType<typeof createHash>, dir: string, entries: readonly ContextEntry[]): Promise<void> {
  for (const e of entries) {
    hash.update(`\0${e.kind}\0${e.rel}\0${e.mode}\0${e.link ?? ''}\0`);
    if (e.kind !== 'file') continue;
    const fh = await open(path.join(dir, e.rel), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      for await (const chunk of fh.createReadStream()) hash.update(chunk as Buffer);
    } finally {
      await fh.close().catch(() => undefined);
    }
  }
}

/** A tar of `entries` of `dir`, with `extra` files added (a generated Dockerfile, env files). */
export function packContext(dir: string, entries: readonly ContextEntry[], extra: ReadonlyArray<{ name: string; content: string; mode?: number }>): NodeJS.ReadableStream {
  const pack = tar.pack();
  void (async () => {
    try {
      for (const e of entries) {
        const header = { name: e.rel, mode: e.mode, mtime: new Date(0) };
        if (e.kind === 'dir') pack.entry({ ...header, type: 'directory' });
        else if (e.kind === 'symlink') pack.entry({ ...header, type: 'symlink', linkname: e.link! });
        else {
          const fh = await open(path.join(dir, e.rel), constants.O_RDONLY | constants.O_NOFOLLOW);
          const st = await fh.stat();
          await new Promise<void>((resolve, reject) => {
            const w = pack.entry({ ...header, size: st.size }, (err) => (err ? reject(err) : resolve()));
            const r = createReadStream('', { fd: fh, autoClose: true });
            r.on('error', reject);
            r.pipe(w);
          });
        }
      }
      for (const x of extra) pack.entry({ name: x.name, mode: x.mode ?? 0o644, mtime: new Date(0) }, x.content);
      pack.finalize();
    } catch (err) {
      pack.destroy(err as Error);
    }
  })();
  return pack as unknown as NodeJS.ReadableStream;
}
