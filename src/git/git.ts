/**
 * The one hardened wrapper around the git binary. Every host git call passes
 * here: argv arrays (never a shell), a minimal environment, hooks and
 * fsmonitor off, the runner's identity (unless a call names whose), and an explicit git directory where the
 * caller pins one. Messages and other data go through stdin, never argv.
 */
import { spawn } from 'node:child_process';
import { clip } from '../common/clip.js';
import { GitError } from '../common/errors.js';

export interface GitIdentity {
  /** run git as this uid:gid (when the runner is root and the project belongs to someone else) */
  uid?: number;
  gid?: number;
  /** that user's home, where their own git config is (read only for `author: 'configured'`) */
  home?: string;
}

export interface GitCall {
  cwd: string;
  /** pins the git directory: `--git-dir` */
  gitDir?: string;
  /** with gitDir: `--work-tree` */
  workTree?: string;
  /** pins the common git directory (GIT_COMMON_DIR), rather than reading the `commondir` file */
  commonDir?: string;
  /** an index other than the git directory's own (GIT_INDEX_FILE) */
  indexFile?: string;
  /** more `-c key=value` settings for this call */
  config?: readonly string[];
  /** read no global or system config nor system attributes: for calls on a worktree a step has written */
  isolated?: boolean;
  /** sent on stdin (bytes, for paths that are not UTF-8) */
  input?: string | Buffer;
  /** resolve with the exit code rather than throw on a non-zero exit */
  allowFail?: boolean;
  /**
   * who commits: the runner (the default, for step commits), this person, or `configured`: whoever the
   * repository's config and the user's environment name, as a plain git command there would (no identity set)
   */
  author?: GitPerson | 'configured';
}

export interface GitPerson {
  name: string;
  email: string;
}

export interface GitResult {
  code: number;
  stdout: string;
  /** stdout as git wrote it: paths and symlink targets a step made need not be UTF-8 */
  stdoutBytes: Buffer;
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
    const argv = [...HARDENING, ...(call.config ?? [])].flatMap((c) => ['-c', c]);
    if (call.gitDir) argv.push(`--git-dir=${call.gitDir}`);
    if (call.workTree) argv.push(`--work-tree=${call.workTree}`);
    argv.push(...args);
    const result = await spawnGit(argv, call, this.who);
    if (result.code !== 0 && !call.allowFail) {
      // the start of what git said: a step can make git say a lot (a warning per file)
      throw new GitError(
        'git_failed',
        `git ${clip(args.join(' '), 500)} failed in ${call.cwd} (exit ${result.code}): ${clip(result.stderr.trim() || result.stdout.trim(), 2000)}`,
      );
    }
    return result;
  }

  /** stdout, trimmed */
  async out(args: readonly string[], call: GitCall): Promise<string> {
    return (await this.run(args, call)).stdout.trim();
  }
}


/**
 * `-c` settings that switch off the filter drivers the repository's config
 * defines: a step controls `.gitattributes` in its worktree and could select
 * one to run a command on the host during `git add`.
 */
export function filtersOff(names: readonly string[]): string[] {
  return names.flatMap((n) => [`filter.${n}.clean=`, `filter.${n}.smudge=`, `filter.${n}.process=`, `filter.${n}.required=false`]);
}

function gitEnv(who: GitIdentity, call: GitCall): NodeJS.ProcessEnv {
  const switched = who.uid !== undefined && who.uid !== process.getuid?.();
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
    // Another user's git cannot read root's home; it gets none.
    HOME: switched ? '/nonexistent' : (process.env.HOME ?? '/nonexistent'),
    LC_ALL: 'C',
    GIT_TERMINAL_PROMPT: '0',
    GIT_CONFIG_NOSYSTEM: '1',
  };
  if (call.author === 'configured') {
    // what git itself reads when nothing is set: the user's own variables, the config (the owner's home), the mail name
    for (const k of ['GIT_AUTHOR_NAME', 'GIT_AUTHOR_EMAIL', 'GIT_COMMITTER_NAME', 'GIT_COMMITTER_EMAIL', 'EMAIL'] as const) {
      if (process.env[k] !== undefined && !switched) env[k] = process.env[k];
    }
    if (switched && who.home) env.HOME = who.home;
  } else {
    const p = call.author ?? RUNNER_IDENTITY;
    Object.assign(env, { GIT_AUTHOR_NAME: p.name, GIT_AUTHOR_EMAIL: p.email, GIT_COMMITTER_NAME: p.name, GIT_COMMITTER_EMAIL: p.email });
  }
  if (call.commonDir) env.GIT_COMMON_DIR = call.commonDir;
  if (call.isolated) {
    env.GIT_CONFIG_GLOBAL = '/dev/null';
    env.GIT_ATTR_NOSYSTEM = '1';
  }
  if (call.indexFile) env.GIT_INDEX_FILE = call.indexFile;
  // Push authentication the user has already set up (an ssh agent) keeps working.
  if (process.env.SSH_AUTH_SOCK && !switched) env.SSH_AUTH_SOCK = process.env.SSH_AUTH_SOCK;
  return env;
}

/** No git call the runner makes should take this long; a hung one is killed. */
export const GIT_TIMEOUT_MS = 10 * 60_000;
const MAX_OUTPUT = 256 * 1024 * 1024;

function spawnGit(argv: string[], call: GitCall, who: GitIdentity): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    // Its own process group: a Ctrl-C at the terminal reaches the runner,
    // which finishes the commit it is making rather than lose it.
    const child = spawn('git', argv, {
      cwd: call.cwd,
      env: gitEnv(who, call),
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(who.uid !== undefined && who.uid !== process.getuid?.() ? { uid: who.uid, gid: who.gid ?? who.uid } : {}),
    });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    const collect = (into: Buffer[]) => (b: Buffer) => {
      size += b.length;
      if (size <= MAX_OUTPUT) into.push(b);
    };
    child.stdout.on('data', collect(out));
    child.stderr.on('data', collect(err));
    const timer = setTimeout(() => child.kill('SIGKILL'), GIT_TIMEOUT_MS);
    child.on('error', (e: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(
        e.code === 'ENOENT'
          ? new GitError('git_missing', 'git is not installed or not on PATH: install it (apt-get install git)', { cause: e })
          : new GitError('git_failed', `git could not be run in ${call.cwd}: ${e.message}`, { cause: e }),
      );
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      const stderr = Buffer.concat(err).toString('utf8');
      const stdoutBytes = Buffer.concat(out);
      resolve({
        code: code ?? 128,
        stdout: stdoutBytes.toString('utf8'),
        stdoutBytes,
        stderr: signal ? `${stderr}git was killed by ${signal}${signal === 'SIGKILL' ? ` after ${GIT_TIMEOUT_MS / 1000}s` : ''}` : stderr,
      });
    });
    // git may exit before reading stdin (EPIPE): its exit code tells what happened.
    child.stdin.on('error', () => undefined);
    child.stdin.end(call.input ?? '');
  });
}
