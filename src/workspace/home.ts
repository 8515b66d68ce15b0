/**
 * The runner home: where worktrees and run records live, flat.
 *   worktrees/<runId>/   runs/<runId>/{run.json, events.jsonl, steps/<id>.log, io/<id>/}
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

  async ensure(): Promise<void> {
    await mkdir(this.worktrees, { recursive: true, mode: 0o755 });
    await mkdir(this.runs, { recursive: true, mode: 0o755 });
  }
}
