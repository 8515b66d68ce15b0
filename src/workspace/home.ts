/**
 * The runner home: where worktrees and run records live, flat.
 *   worktrees/<runId>/   tasks/<taskId>/ + tasks/<taskId>.json   locks/
 *   runs/<runId>/{run.json, events.jsonl, hooks.log, steps/<id>.log, steps/<id>.patch}
 */
import { mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export function resolveHome(flag: string | undefined, env: NodeJS.ProcessEnv = process.env): string {
  if (flag) return path.resolve(flag);
  if (env.RUNNER_HOME) return path.resolve(env.RUNNER_HOME);
  if (env.XDG_STATE_HOME) return path.join(path.resolve(env.XDG_STATE_HOME), 'runner');
  return path.join(os.homedir(), '.local', 'state', 'runner');
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

  /** temporary worktrees of runner merge (always removed) */
  get merges(): string {
    return path.join(this.root, 'merges');
  }

  get locks(): string {
    return path.join(this.root, 'locks');
  }

  async ensure(): Promise<void> {
    for (const dir of [this.worktrees, this.runs, this.tasks, this.locks]) await mkdir(dir, { recursive: true, mode: 0o755 });
  }
}
