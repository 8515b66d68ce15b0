/**
 * Who a plain `git commit` in the project would name: its config, the user's
 * global config and variables, git's own guess. Used for what the runner
 * commits on the user's behalf (a merge into their branch); step commits keep
 * the runner's identity and their trailers.
 */
import type { Git, GitPerson } from './git.js';

/** `Name <email> 1700000000 +0000`, as `git var GIT_AUTHOR_IDENT` prints it. Pure. */
export function parseIdent(line: string): GitPerson | undefined {
  const m = /^(.*?) <([^<>]*)> \d+ [+-]\d{4}$/.exec(line.trim());
  return m && m[1] && m[2] ? { name: m[1], email: m[2] } : undefined;
}

/** The project's identity, or undefined when git has none it would commit with (it would refuse). */
export async function configuredIdentity(git: Git, where: { root: string; commonDir: string }): Promise<GitPerson | undefined> {
  const r = await git.run(['var', 'GIT_AUTHOR_IDENT'], { cwd: where.root, gitDir: where.commonDir, author: 'configured', allowFail: true });
  return r.code === 0 ? parseIdent(r.stdout) : undefined;
}
