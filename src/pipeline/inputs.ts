/**
 * A run's inputs: the values it was started with (runner exec --input, the
 * API's trigger), checked against the pipeline's inputs: and completed with
 * their defaults. Pure.
 */
import { didYouMean } from '../common/did-you-mean.js';
import { RunnerError } from '../common/errors.js';
import type { PipelineFile } from './schema.js';

/** Longer values belong in a file of the project, not on a command line. */
export const MAX_INPUT_BYTES = 16 * 1024;

export function resolveInputs(p: Pick<PipelineFile, 'name' | 'inputs'>, given: Readonly<Record<string, string>>): Record<string, string> {
  const declared = p.inputs ?? {};
  const names = Object.keys(declared);
  const problems: string[] = [];
  for (const [name, value] of Object.entries(given)) {
    if (!Object.hasOwn(declared, name)) {
      problems.push(
        names.length
          ? `pipeline ${p.name} has no input "${name}"${didYouMean(name, names)}; its inputs: ${names.join(', ')}`
          : `pipeline ${p.name} takes no inputs (got "${name}")`,
      );
    } else if (value.includes('\0')) {
      problems.push(`input ${name} holds a NUL byte, which no program can receive in an argument or its environment: leave it out`);
    } else if (Buffer.byteLength(value) > MAX_INPUT_BYTES) {
      problems.push(`input ${name} is ${Buffer.byteLength(value)} bytes; at most ${MAX_INPUT_BYTES} (put longer text in a file of the project)`);
    }
  }
  const out = new Map<string, string>();
  for (const [name, input] of Object.entries(declared)) {
    const value = Object.hasOwn(given, name) ? given[name] : input.default;
    if (value === undefined) problems.push(`input ${name} is required${input.description ? ` (${input.description})` : ''}: give it a value`);
    else out.set(name, value);
  }
  if (problems.length) throw new RunnerError('bad_input', problems.join('\n'));
  return Object.fromEntries(out);
}

/** `NAME=VALUE` pairs from the command line. */
export function parseInputFlags(pairs: readonly string[]): Record<string, string> {
  const out = new Map<string, string>();
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new RunnerError('bad_input', `--input takes NAME=VALUE, got "${pair}"`);
    const name = pair.slice(0, eq);
    if (out.has(name)) throw new RunnerError('bad_input', `--input ${name} is given twice`);
    out.set(name, pair.slice(eq + 1));
  }
  return Object.fromEntries(out);
}
