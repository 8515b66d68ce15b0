/** Strict flag parsing with errors that say what to do. */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../common/errors.js';

export function parseFlags<T extends NonNullable<ParseArgsConfig['options']>>(
  command: string,
  args: string[],
  options: T,
  /** the names of the positional arguments expected, exactly; or 'any' */
  positionals: string[] | 'any',
) {
  let parsed;
  try {
    parsed = parseArgs({ args, options, allowPositionals: true, strict: true });
  } catch (err) {
    throw new UsageError(`${command}: ${(err as Error).message.split('\n')[0]} (runner --help)`);
  }
  if (positionals !== 'any' && parsed.positionals.length !== positionals.length) {
    throw new UsageError(`${command}: expected ${positionals.join(' ')}, got ${parsed.positionals.length ? parsed.positionals.join(' ') : 'nothing'} (runner --help)`);
  }
  return parsed;
}
