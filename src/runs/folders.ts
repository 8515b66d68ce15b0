/**
 * The folders an MCP server was given, and what it may touch in them: a
 * pipeline file or a project is taken only when its real path (every
 * symlink resolved) lies under one of them, so neither `../` nor a symlink
 * planted in a folder reaches out of it.
 */
import { realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';

/** Whether `real` is `root` or lies under it (both real, absolute paths). Pure. */
export function isUnder(real: string, root: string): boolean {
  const rel = path.relative(root, real);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** The folders, each as its real path; a missing one is an error that names it. */
export async function realFolders(dirs: string[], flag: string): Promise<string[]> {
  const out: string[] = [];
  for (const d of dirs) {
    const real = await realpath(d).catch(() => undefined);
    if (!real || !(await stat(real)).isDirectory()) throw new RunnerError('usage', `mcp: ${flag} ${d} is not a folder`);
    out.push(real);
  }
  return out;
}

/**
 * A path the client gave, resolved against the first folder when relative,
 * then to its real path, which must lie under one of `roots`. The error says
 * which folders may be used.
 */
export async function within(given: string, roots: string[], what: string, flag: string): Promise<string> {
  if (!roots.length) throw new RunnerError('outside_folders', `this server was given no ${flag} folder, so it takes no ${what}: start it with ${flag} DIR`);
  if (given.includes('\0')) throw new RunnerError('outside_folders', `the ${what} path holds a NUL character`);
  const abs = path.isAbsolute(given) ? given : path.resolve(roots[0]!, given);
  const real = await realpath(abs).catch(() => undefined);
  if (!real) throw new RunnerError('not_found', `no ${what} at ${abs}: give a path under ${roots.join(', ')}`);
  if (!roots.some((r) => isUnder(real, r))) {
    throw new RunnerError('outside_folders', `${abs}${real !== abs ? ` (really ${real})` : ''} is not under ${roots.length > 1 ? 'any of ' : ''}${roots.join(', ')}: this server takes only ${what}s under its ${flag} folder${roots.length > 1 ? 's' : ''}`);
  }
  return real;
}
