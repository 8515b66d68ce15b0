/**
 * Whether a merge target is a name git takes for a branch (git
 * check-ref-format's rules for refs/heads/<name>), decided before git sees
 * it. Without this, `main@{0}` or `main^0`-like text would be read by git as a
 * revision of another ref: the merge ran against it, and only the final
 * update-ref refused the name. Pure.
 */

/** Why `name` is not a branch name, or undefined when it is one. */
export function branchNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'it is empty';
  if (name.length > 255) return 'it is over 255 characters';
  if (name.startsWith('-')) return 'it starts with "-"';
  if (/[\0-\x20\x7f~^:?*[\\]/.test(name)) return 'it holds a space, a control character or one of ~^:?*[\\';
  if (name.includes('..')) return 'it holds ".."';
  if (name.includes('@{')) return 'it holds "@{"';
  if (name === '@') return 'it is "@"';
  if (name.startsWith('/') || name.endsWith('/') || name.includes('//')) return 'it starts or ends with "/", or holds "//"';
  if (name.endsWith('.')) return 'it ends with "."';
  for (const part of name.split('/')) {
    if (part.startsWith('.')) return 'a part of it starts with "."';
    if (part.endsWith('.lock')) return 'a part of it ends with ".lock"';
  }
  return undefined;
}
