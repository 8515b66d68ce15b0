/**
 * What a step's process can be given: Linux takes at most 128 KiB in one
 * argument or environment string (MAX_ARG_STRLEN, "argument list too long"),
 * and the engine refuses a create request much above 1 MiB (HTTP 431). A value
 * that big (an earlier step's 1 MiB output used in env:) fails the step that
 * would receive it, before any container, with a message that says so; so
 * does a NUL byte, which no argument or variable can hold, and a secret whose
 * name the secrets prelude cannot carry. Secrets count as the variables they
 * become. Pure.
 */
import { formatSize } from '../common/durations.js';
import { secretNameProblem } from '../container/secret-env.js';
import type { RenderedStep } from './render.js';

export const MAX_EXEC_STRING = 128 * 1024 - 1;
export const MAX_EXEC_TOTAL = 1024 * 1024;

export function execSizeProblem(step: Pick<RenderedStep, 'cmd' | 'env'> & Partial<Pick<RenderedStep, 'secretEnv'>>): string | undefined {
  const secretNames = Object.keys(step.secretEnv ?? {});
  const badName = secretNames.map(secretNameProblem).find((p) => p !== undefined);
  if (badName) return badName;
  const r = { cmd: step.cmd, env: { ...step.env, ...step.secretEnv } };
  const fix = 'write big values to a file (in the workspace, or $RUNNER_OUTPUT\'s directory) and read them there';
  let total = 0;
  const nul = r.cmd.findIndex((a) => a.includes('\0'));
  if (nul >= 0) return `argument ${nul} of its command holds a NUL byte, which no program can receive`;
  const nulVar = Object.entries(r.env).find(([, v]) => v.includes('\0'));
  if (nulVar) return `its environment variable ${nulVar[0]} holds a NUL byte, which no program can receive`;
  for (const [i, arg] of r.cmd.entries()) {
    const n = Buffer.byteLength(arg);
    total += n + 1;
    if (n > MAX_EXEC_STRING) return `argument ${i} of its command is ${formatSize(n)}, over the ${formatSize(MAX_EXEC_STRING + 1)} a program can take in one argument: ${fix}`;
  }
  for (const [k, v] of Object.entries(r.env)) {
    const n = Buffer.byteLength(k) + 1 + Buffer.byteLength(v);
    total += n + 1;
    const what = k.startsWith('RUNNER_EXPR_') ? `${k} (an expression of its run: script)` : k === 'RUNNER_PROMPT' ? `${k} (its prompt)` : k;
    if (n > MAX_EXEC_STRING) return `its environment variable ${what} is ${formatSize(n)}, over the ${formatSize(MAX_EXEC_STRING + 1)} a program can take in one variable: ${fix}`;
  }
  if (total > MAX_EXEC_TOTAL) return `its command and environment come to ${formatSize(total)}, over the ${formatSize(MAX_EXEC_TOTAL)} a container can be given: ${fix}`;
  return undefined;
}
