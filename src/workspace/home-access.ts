/**
 * Can a project's owner reach the runner home? As root, the runner runs git
 * as the project's owner, and git writes the worktree under the home's
 * worktrees/ (and the diff under runs/): every directory on the way must let
 * that uid through. Checked before a run creates anything, so a home under
 * /root (mode 700) is an error that says what to do, not a half-made run.
 */
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { WorkspaceError } from '../common/errors.js';

export interface DirFacts {
  path: string;
  mode: number;
  uid: number;
  gid: number;
}

/** The first directory `who` may not pass through (no x for it), or undefined. Pure. */
export function blockingDir(dirs: DirFacts[], who: { uid: number; gid: number }): DirFacts | undefined {
  if (who.uid === 0) return undefined;
  return dirs.find((d) => {
    const bits = d.uid === who.uid ? (d.mode >> 6) & 7 : d.gid === who.gid ? (d.mode >> 3) & 7 : d.mode & 7;
    return (bits & 1) === 0;
  });
}

/** Every existing directory from / down to `dir`. */
async function chain(dir: string): Promise<DirFacts[]> {
  const out: DirFacts[] = [];
  for (let p = path.resolve(dir); ; p = path.dirname(p)) {
    const st = await stat(p).catch(() => undefined);
    if (st?.isDirectory()) out.unshift({ path: p, mode: st.mode & 0o7777, uid: st.uid, gid: st.gid });
    if (path.dirname(p) === p) break;
  }
  return out;
}

/** Throws home_unreachable (exit 2) when the project's owner cannot reach the home's directories git works in (`dirs`). */
export async function checkHomeReachable(home: string, dirs: string[], owner: { uid: number; gid: number }, project: string): Promise<void> {
  if (process.getuid?.() !== 0 || owner.uid === 0) return;
  let blocked: DirFacts | undefined;
  for (const dir of dirs) blocked ??= blockingDir(await chain(dir), owner);
  if (!blocked) return;
  throw new WorkspaceError(
    'home_unreachable',
    `the runner home ${home} cannot be reached by uid ${owner.uid}, who owns ${project} and as whom git works there: ` +
      `${blocked.path} (mode ${blocked.mode.toString(8)}, owner uid ${blocked.uid}) lets it not through. ` +
      `Use a home every project owner can reach: the default for root, /var/lib/runner (unset RUNNER_HOME, drop --home), or --home /srv/runner/home; ` +
      `or open the way: chmod o+x ${blocked.path}`,
  );
}
