/**
 * A step's secrets as environment variables of its process, never of its
 * container: the engine shows a container's env, command, labels and mounts
 * to anyone who may read its API (`docker inspect`). The step's command is
 * started through a POSIX sh prelude (no secret in it) that reads
 * `NAME <escaped value>` lines from its standard input, exports them, and
 * execs the command with an empty standard input. Each byte of a value is a
 * `\0ooo` escape for `printf %b`, which dash, bash and busybox ash decode
 * exactly; a `_` after it keeps trailing newlines through `$( )`. Pure.
 */
/** as the pipeline's schema takes them (pipeline/schema.ts ENV_NAME_RE) */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The prelude's own variables: a secret of one of these names could not pass through it. */
export const PRELUDE_VARIABLES = ['RUNNER_SECRET_NAME', 'RUNNER_SECRET_VALUE'] as const;

/** where the prelude's program name ($0) shows, in `ps` and its own errors */
export const PRELUDE_NAME = 'runner-secrets';

export const SECRET_ENV_PRELUDE = [
  'while IFS=" " read -r RUNNER_SECRET_NAME RUNNER_SECRET_VALUE; do',
  '  case $RUNNER_SECRET_NAME in ""|[0-9]*|*[!A-Za-z0-9_]*) echo "runner-secrets: a secret came without a valid name" >&2; exit 125;; esac',
  '  RUNNER_SECRET_VALUE=$(printf "%b_" "$RUNNER_SECRET_VALUE") || exit 125',
  '  export "$RUNNER_SECRET_NAME=${RUNNER_SECRET_VALUE%_}"',
  'done',
  'unset RUNNER_SECRET_NAME RUNNER_SECRET_VALUE',
  'exec "$@" </dev/null',
].join('\n');

/**
 * The argv that starts `argv` through the prelude: `/bin/sh -c <prelude> runner-secrets argv...`;
 * `from`: a file the prelude reads its input from, in place of its standard input (a swarm secret's path).
 */
export function preludeArgv(argv: readonly string[], from?: string): string[] {
  if (from !== undefined && !/^\/[A-Za-z0-9._/-]+$/.test(from)) throw new Error(`the secrets prelude reads from a plain absolute path, not ${JSON.stringify(from)}`);
  const script = from === undefined ? SECRET_ENV_PRELUDE : `exec <${from} || exit 125\n${SECRET_ENV_PRELUDE}`;
  return ['/bin/sh', '-c', script, PRELUDE_NAME, ...argv];
}

/** The prelude's input: one `NAME \0ooo\0ooo…` line a secret. */
export function encodeSecretEnv(env: Readonly<Record<string, string>>): string {
  let out = '';
  for (const [name, value] of Object.entries(env)) {
    const problem = secretNameProblem(name);
    if (problem) throw new Error(problem);
    if (value.includes('\0')) throw new Error(`secret ${name} holds a NUL byte, which no environment variable can`);
    let escaped = '';
    for (const b of Buffer.from(value, 'utf8')) escaped += `\\0${b.toString(8).padStart(3, '0')}`;
    out += `${name} ${escaped}\n`;
  }
  return out;
}

/** Why a secret of this name cannot reach a process through the prelude, or undefined. */
export function secretNameProblem(name: string): string | undefined {
  if (!ENV_NAME.test(name)) return `secret name ${JSON.stringify(name)} is not an environment variable name`;
  if ((PRELUDE_VARIABLES as readonly string[]).includes(name)) return `secret name ${name} is the runner's own (it hands secrets over through it): rename the secret`;
  return undefined;
}
