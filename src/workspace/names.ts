/**
 * Names that reach a path or a ref (run id, step id, pipeline name) and the
 * containment of computed paths. Pure, apart from realpath in childPath.
 */
import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../common/errors.js';

/** Reduces a name to `[A-Za-z0-9._-]`; refuses `.`, `..` and empty. */
export function safeName(input: string, what: string): string {
  const reduced = input.replace(/[^A-Za-z0-9._-]+/g, '-').replace(/^-+|-+$/g, '');
  if (reduced === '' || reduced === '.' || reduced === '..' || /^\.+$/.test(reduced)) {
    throw new WorkspaceError('unsafe_name', `${what} ${JSON.stringify(input)} cannot be used as a name: use letters, digits, ".", "_" and "-"`);
  }
  return reduced;
}

/**
 * `root/name` for a safe name, checked on resolved paths to be a direct
 * child of the root (a root reached through a symlink works; `/w` vs
 * `/w-evil` cannot be confused, since the check is on path segments).
 */
export async function childPath(root: string, name: string, what: string): Promise<string> {
  const safe = safeName(name, what);
  if (safe !== name) {
    throw new WorkspaceError('unsafe_name', `${what} ${JSON.stringify(name)} is not a safe name (it would become ${JSON.stringify(safe)})`);
  }
  const realRoot = await realpath(root);
  const child = path.join(realRoot, safe);
  if (path.dirname(child) !== realRoot) {
    throw new WorkspaceError('path_escape', `${what} ${JSON.stringify(name)} resolves outside ${realRoot}`);
  }
  return child;
}

/** Throws unless `dir` is a real directory (not a symlink to one). */
export async function verifyDirectory(dir: string): Promise<void> {
  const st = await lstat(dir).catch(() => undefined);
  if (!st?.isDirectory()) {
    throw new WorkspaceError('workspace_tampered', `${dir} is no longer the directory the runner created`);
  }
}
