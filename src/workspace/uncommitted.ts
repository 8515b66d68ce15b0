/**
 * What a run will not see: a run's worktree comes from a commit (HEAD, or
 * project.base), so the project's uncommitted edits and new files are not in
 * it. The runner says so before the run starts, naming a few, so no one
 * believes a step (an agent) saw a file it never had.
 */
import { filtersOff, type Git } from '../git/git.js';
import { repositoryFilters } from './git-worktree.js';
import type { ProjectFacts } from './project.js';

export interface Uncommitted {
  /** a few of them, as `path (untracked)` or `path (modified)` */
  named: string[];
  count: number;
}

const NAMED = 5;

/** `git status --porcelain -z` output as what is left out. Pure. */
export function parseUncommitted(porcelainZ: string, except: readonly string[] = []): Uncommitted {
  const entries: string[] = [];
  const parts = porcelainZ.split('\0');
  for (let i = 0; i < parts.length; i++) {
    const e = parts[i]!;
    if (e.length < 4) continue;
    const [x, y, p] = [e[0], e[1], e.slice(3)];
    // a rename or copy is followed by its old path
    if (x === 'R' || x === 'C') i++;
    if (except.includes(p)) continue;
    const how = x === '?' ? 'untracked' : x === 'D' || y === 'D' ? 'deleted' : x === 'A' ? 'added, not committed' : x === 'R' ? 'renamed' : 'modified';
    entries.push(`${p} (${how})`);
  }
  return { named: entries.slice(0, NAMED), count: entries.length };
}

/** The warning for a run from `base`, or undefined when nothing is left out. Pure. */
export function uncommittedNotice(u: Uncommitted, base: string): string | undefined {
  if (!u.count) return undefined;
  const more = u.count > u.named.length ? `, and ${u.count - u.named.length} more` : '';
  return (
    `the project has ${u.count} uncommitted change${u.count === 1 ? '' : 's'} this run will not see (it starts from the commit ${base.slice(0, 10)}): ` +
    `${u.named.join(', ')}${more}. To include them, commit them first (git add -A && git commit); ` +
    `a task for an agent can also be given as an input (--input task="...") when the pipeline takes one`
  );
}

/**
 * What of the project's checkout is not in HEAD, but `except` (paths from the project's top: the pipeline
 * file, read where it is).
 */
export async function readUncommitted(git: Git, project: ProjectFacts, except: readonly string[] = []): Promise<Uncommitted> {
  // found from the checkout itself (it may be a linked worktree, with an index of its own); no filter runs
  const config = filtersOff(await repositoryFilters(git, project).catch(() => []));
  const r = await git.run(['status', '--porcelain=v1', '-z', '--untracked-files=normal', '--ignore-submodules=all'], { cwd: project.root, config, allowFail: true });
  return r.code === 0 ? parseUncommitted(r.stdout, except) : { named: [], count: 0 };
}
