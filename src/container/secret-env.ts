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
    out += `${name} ${escapeBytes(value)}\n`;
  }
  return out;
}

/** Each byte a `\0ooo` escape, which `printf %b` decodes exactly. Pure. */
export function escapeBytes(value: string): string {
  let escaped = '';
  for (const b of Buffer.from(value, 'utf8')) escaped += `\\0${b.toString(8).padStart(3, '0')}`;
  return escaped;
}

/**
 * A warm step container's command (src/run/warm-steps.ts): made and started before any step claims it, it waits
 * in this prelude for its standard input, which the claim writes: the step's variables (`E NAME value`, secrets
 * among them) and its command, word by word (`A - word`), each value escaped as the secrets' are; a value of plain
 * characters only (PLAIN) comes as it is (`P NAME value`, `B - word`), without the subshell an escaped one costs (a
 * step has about 25 variables, most of them plain). Nothing of the step is in the container's config, nor known
 * when it is made. It runs nothing before its input ends.
 */
export const WARM_PRELUDE = [
  'set --',
  'while IFS=" " read -r RUNNER_WARM_KIND RUNNER_WARM_NAME RUNNER_WARM_VALUE; do',
  '  case $RUNNER_WARM_KIND in',
  '    E|A) RUNNER_WARM_VALUE=$(printf "%b_" "$RUNNER_WARM_VALUE") || exit 125; RUNNER_WARM_VALUE=${RUNNER_WARM_VALUE%_};;',
  '  esac',
  '  case $RUNNER_WARM_KIND in',
  '    E|P) case $RUNNER_WARM_NAME in ""|[0-9]*|*[!A-Za-z0-9_]*) echo "runner-warm: a variable came without a valid name" >&2; exit 125;; esac',
  '       export "$RUNNER_WARM_NAME=$RUNNER_WARM_VALUE";;',
  '    A|B) set -- "$@" "$RUNNER_WARM_VALUE";;',
  '    *) echo "runner-warm: a line it does not know" >&2; exit 125;;',
  '  esac',
  'done',
  'unset RUNNER_WARM_KIND RUNNER_WARM_NAME RUNNER_WARM_VALUE',
  '[ $# -gt 0 ] || { echo "runner-warm: no command came (the runner gave the container back)" >&2; exit 125; }',
  'exec "$@" </dev/null',
].join('\n');

/** the warm prelude's own variables: a step's variable of one of these names could not pass through it */
export const WARM_PRELUDE_VARIABLES = ['RUNNER_WARM_KIND', 'RUNNER_WARM_NAME', 'RUNNER_WARM_VALUE'] as const;

export const WARM_PRELUDE_NAME = 'runner-warm';

/** what `read -r` with IFS=" " gives back as it is: no space, tab, newline or backslash */
const PLAIN = /^[A-Za-z0-9_.\/:,=@%+-]*$/;

/** The warm prelude's input: the step's variables, then its command (at least one word). Pure. */
export function encodeWarmStart(env: Readonly<Record<string, string>>, argv: readonly string[]): string {
  if (!argv.length) throw new Error('a warm container is handed a command of at least one word');
  let out = '';
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) throw new Error(`variable name ${JSON.stringify(name)} is not an environment variable name`);
    if ((WARM_PRELUDE_VARIABLES as readonly string[]).includes(name)) throw new Error(`variable name ${name} is the runner's own (a warm container's start reads it): rename it`);
    if (value.includes('\0')) throw new Error(`variable ${name} holds a NUL byte, which no environment variable can`);
    out += PLAIN.test(value) ? `P ${name} ${value}\n` : `E ${name} ${escapeBytes(value)}\n`;
  }
  for (const word of argv) {
    if (word.includes('\0')) throw new Error('a word of the command holds a NUL byte, which no argument can');
    // the name field is a placeholder: `read` splits on the first two spaces
    out += PLAIN.test(word) ? `B - ${word}\n` : `A - ${escapeBytes(word)}\n`;
  }
  return out;
}

/** Why a secret of this name cannot reach a process through the prelude, or undefined. */
export function secretNameProblem(name: string): string | undefined {
  if (!ENV_NAME.test(name)) return `secret name ${JSON.stringify(name)} is not an environment variable name`;
  if ((PRELUDE_VARIABLES as readonly string[]).includes(name)) return `secret name ${name} is the runner's own (it hands secrets over through it): rename the secret`;
  return undefined;
}
