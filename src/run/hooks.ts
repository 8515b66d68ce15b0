/**
 * Lifecycle hooks: shell scripts from the pipeline file (never from the
 * workspace), run on the host with the workspace as working directory, a
 * restricted environment, a timeout that kills the hook's whole process
 * group, and output captured up to a cap without ever blocking the hook.
 */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { homeIn } from '../common/user-home.js';

export type HookName = 'after_create' | 'before_run' | 'after_run' | 'before_remove';

export const HOOK_OUTPUT_CAP = 256 * 1024;
export const DEFAULT_HOOK_TIMEOUT_MS = 60_000;

export interface HookRun {
  name: HookName;
  script: string;
  cwd: string;
  env: Record<string, string>;
  timeoutMs: number;
  /** run as this user when the runner is root (the workspace's owner) */
  user?: { uid: number; gid: number };
}

export interface HookResult {
  ok: boolean;
  exitCode: number | null;
  timedOut: boolean;
  output: string;
  cut: boolean;
  durationMs: number;
}

/** Inherited from the runner: only what a shell script needs to find its tools. */
const INHERITED = ['PATH', 'LANG', 'LC_ALL', 'TZ', 'TERM', 'SSH_AUTH_SOCK'];

export function hookEnv(run: Record<string, string>, user?: { uid: number }): Record<string, string> {
  const env: Record<string, string> = {};
  for (const k of INHERITED) if (process.env[k] !== undefined) env[k] = process.env[k]!;
  env.PATH ??= '/usr/local/bin:/usr/bin:/bin';
  const switched = user !== undefined && user.uid !== process.getuid?.();
  env.HOME = switched ? homeOf(user.uid) : (process.env.HOME ?? '/');
  if (switched) delete env.SSH_AUTH_SOCK;
  return { ...env, ...run };
}

export function runHook(h: HookRun): Promise<HookResult> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const switchUser = h.user !== undefined && process.getuid?.() === 0 && h.user.uid !== 0;
    // Its own process group, so that a timeout kills it with every child and grandchild.
    const child = spawn('/bin/sh', ['-c', h.script], {
      cwd: h.cwd,
      env: h.env,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(switchUser ? { uid: h.user!.uid, gid: h.user!.gid } : {}),
    });
    let output = '';
    let cut = false;
    const take = (b: Buffer) => {
      if (output.length >= HOOK_OUTPUT_CAP) {
        cut = true;
        return; // keep reading so the hook never blocks on a full pipe
      }
      output += b.toString('utf8');
      if (output.length > HOOK_OUTPUT_CAP) {
        output = output.slice(0, HOOK_OUTPUT_CAP);
        cut = true;
      }
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    let timedOut = false;
    const killGroup = () => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // the group is already gone
      }
    };
    const timer = setTimeout(() => {
      timedOut = true;
      killGroup();
    }, h.timeoutMs);
    let settled = false;
    const finish = (exitCode: number | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      // Whatever the hook left running in its group goes with it; one that
      // left the group (setsid) keeps no pipe of ours open.
      killGroup();
      child.stdout.destroy();
      child.stderr.destroy();
      resolve({
        ok: !timedOut && exitCode === 0,
        exitCode,
        timedOut,
        output: cut ? `${output}\n[runner: hook output cut at ${HOOK_OUTPUT_CAP} bytes]` : output,
        cut,
        durationMs: Math.round(performance.now() - t0),
      });
    };
    child.on('error', (err) => {
      output += `could not run the hook: ${err.message}`;
      finish(null);
    });
    // 'exit', not 'close': a background process may hold the pipes open.
    child.on('exit', (code) => setTimeout(() => finish(code), 50));
  });
}

function homeOf(uid: number): string {
  let passwd = '';
  try {
    passwd = readFileSync('/etc/passwd', 'utf8');
  } catch {
    // no passwd: the root of the filesystem, as before
  }
  return homeIn(passwd, uid) ?? '/';
}
