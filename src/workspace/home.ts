/**
 * The runner home: where worktrees and run records live, flat.
 *   worktrees/<runId>/   tasks/<taskId>/ + tasks/<taskId>.json   merges/
 *   runs/<runId>/{run.json, events.jsonl, hooks.log, steps/<id>.log, steps/<id>.patch}
 */
import { chmod, mkdir, realpath } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

/** Root's default home: system state lives in /var/lib, where every project's owner can reach it (/root is mode 700). */
export const ROOT_HOME = '/var/lib/runner';

export function resolveHome(flag: string | undefined, env: NodeJS.ProcessEnv = process.env, uid = process.getuid?.()): string {
  if (flag) return path.resolve(flag);
  if (env.RUNNER_HOME) return path.resolve(env.RUNNER_HOME);
  if (uid === 0) return ROOT_HOME;
  if (env.XDG_STATE_HOME) return path.join(path.resolve(env.XDG_STATE_HOME), 'runner');
  return path.join(os.homedir(), '.local', 'state', 'runner');
}

/**
 * The home with every symlink resolved (of the part that exists): one home
 * has one name, in container labels and in the locks that tell live runs.
 */
export async function canonicalHome(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<string> {
  const wanted = resolveHome(flag, env);
  let existing = wanted;
  const rest: string[] = [];
  for (;;) {
    const real = await realpath(existing).catch(() => undefined);
    if (real) return path.join(real, ...rest.reverse());
    const parent = path.dirname(existing);
    if (parent === existing) return wanted;
    rest.push(path.basename(existing));
    existing = parent;
  }
}

export class RunnerHome {
  constructor(readonly root: string) {}

  get worktrees(): string {
    return path.join(this.root, 'worktrees');
  }

  get runs(): string {
    return path.join(this.root, 'runs');
  }

  get tasks(): string {
    return path.join(this.root, 'tasks');
  }

  /** prepared worktrees per project, claimed by runs (worktree-pool.ts) */
  get pool(): string {
    return path.join(this.root, 'pool');
  }

  /** temporary worktrees of runner merge (always removed) */
  get merges(): string {
    return path.join(this.root, 'merges');
  }

  /** Creates what is missing, 0755 whatever the umask: the owners of projects (as whom git works) pass through. */
  async ensure(): Promise<void> {
    for (const dir of [this.worktrees, this.runs, this.tasks, this.pool]) {
      const first = await mkdir(dir, { recursive: true, mode: 0o755 });
      if (!first) continue;
      for (let d = dir; ; d = path.dirname(d)) {
        await chmod(d, 0o755);
        if (d === first || path.dirname(d) === d) break;
      }
    }
  }
}
