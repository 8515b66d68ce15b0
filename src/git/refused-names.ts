/**
 * Names git refuses to store, whatever the file system (its verify_path, with
 * core.protectNTFS on, git's default): any path component that is `.git` in
 * any case, also with trailing dots or spaces, `git~1` (its short name on
 * NTFS), or `.git:` followed by a stream name. On a checkout that folds case
 * or drops trailing dots, each would be the repository's own `.git`. Pure.
 */
const SEPARATORS = /[/\\]/;

export function refusedByGit(path: Buffer): boolean {
  // Every byte that matters is ASCII: latin1 maps bytes one to one, whatever else the name holds.
  return path
    .toString('latin1')
    .split(SEPARATORS)
    .some((part) => {
      const c = part.toLowerCase();
      const trimmed = c.replace(/[. ]+$/, '');
      return trimmed === '.git' || c === 'git~1' || c.startsWith('.git:');
    });
}
