/**
 * The one hardened wrapper around the git binary. Every host git call passes
 * here: argv arrays (never a shell), a minimal environment, hooks and
 * fsmonitor off, a fixed identity, and an explicit git directory where the
 * caller pins one. Messages and other data go through stdin, never argv.
 */
import { execFile } from 'node:child_process';
import { GitError } from '../common/errors.js';

export interface GitIdentity {
  /** run git as this uid:gid (when the runner is root and the project belongs to someone else) */
  uid?: number;
  gid?: number;
}

export interface GitCall {
  cwd: string;
  /** pins the git directory: `--git-dir` */
  gitDir?: string;
  /** with gitDir: `--work-tree` */
  workTree?: string;
  /** sent on stdin */
  input?: string;
  /** resolve with the exit code rather than throw on a non-zero exit */
  allowFail?: boolean;
}

export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Config that keeps repository content from running anything on the host. */
const HARDENING = [
  'core.hooksPath=/dev/null',
  'core.fsmonitor=false',
  'core.untrackedCache=false',
  'gc.auto=0',
  'maintenance.auto=false',
  'commit.gpgSign=false',
  'tag.gpgSign=false',
  'push.gpgSign=false',
  'core.pager=cat',
  'advice.detachedHead=false',
  'init.defaultBranch=main',
];

export const RUNNER_IDENTITY = { name: 'runner', email: 'runner@localhost' };

export class Git {
  constructor(private readonly who: GitIdentity = {}) {}

  async run(args: readonly string[], call: GitCall): Promise<GitResult> {
    const argv = [...HARDENING.flatMap((c) => ['-c', c])];
    if (call.gitDir) argv.push(`--git-dir=${call.gitDir}`);
    if (call.workTree) argv.push(`--work-tree=${call.workTree}`);
    argv.push(...args);
    const result = await spawnGit(argv, call, this.who);
    if (result.code !== 0 && !call.allowFail) {
      throw new GitError(
        'git_failed',
        `git ${args.join(' ')} failed in ${call.cwd} (exit ${result.code}): ${result.stderr.trim() || result.stdout.trim()}`,
      );
    }
    return result;
  }

  /** stdout, trimmed */
  async out(args: readonly string[], call: GitCall): Promise<string> {
    return (await this.run(args, call)).stdout.trim();
  }
}

function gitEnv(who: GitIdentity): NodeJS.ProcessEnv {
  const switched = who.uid !== undefined && who.uid !== process.getuid?.();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    // Another user's git cannot read root's home; it gets none.
    HOME: switched ? '/nonexistent' : (process.env.HOME ?? '/nonexistent'),
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: RUNNER_IDENTITY.name,
    GIT_AUTHOR_EMAIL: RUNNER_IDENTITY.email,
    GIT_COMMITTER_NAME: RUNNER_IDENTITY.name,
    GIT_COMMITTER_EMAIL: RUNNER_IDENTITY.email,
  };
  // Push authentication the user has already set up (an ssh agent) keeps working.
  if (process.env.SSH_AUTH_SOCK && !switched) env.SSH_AUTH_SOCK = process.env.SSH_AUTH_SOCK;
  return env;
}

function spawnGit(argv: string[], call: GitCall, who: GitIdentity): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      argv,
      {
        cwd: call.cwd,
        env: gitEnv(who),
        maxBuffer: 64 * 1024 * 1024,
        ...(who.uid !== undefined && who.uid !== process.getuid?.() ? { uid: who.uid, gid: who.gid ?? who.uid } : {}),
      },
      (err, stdout, stderr) => {
        if (err && typeof err.code !== 'number') {
          const code = (err as NodeJS.ErrnoException).code;
          reject(
            code === 'ENOENT'
              ? new GitError('git_missing', 'git is not installed or not on PATH: install it (apt-get install git)', { cause: err })
              : new GitError('git_failed', `git could not be run in ${call.cwd}: ${err.message}`, { cause: err }),
          );
          return;
        }
        resolve({ code: err ? (err.code as number) : 0, stdout, stderr });
      },
    );
    // git may exit before reading stdin (EPIPE): its exit code tells what happened.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(call.input ?? '');
  });
}
