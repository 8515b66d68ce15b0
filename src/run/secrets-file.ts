/** `--secrets-file`: secrets in dotenv format, parsed by node's own `util.parseEnv`. */
import { readFile } from 'node:fs/promises';
import { parseEnv } from 'node:util';
import { UsageError } from '../common/errors.js';

export async function readSecretsFile(file: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the secrets file ${file} (${(err as NodeJS.ErrnoException).code}): check the --secrets-file path`);
  }
  return parseEnv(text) as Record<string, string>;
}
