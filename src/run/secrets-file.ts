/** `--secrets-file`: secrets in dotenv format, parsed by node's own `util.parseEnv`. */
import { readFile, stat } from 'node:fs/promises';
import { parseEnv } from 'node:util';
import { UsageError } from '../common/errors.js';

/** A warning when others than its owner may read the file (it should be 0600), else undefined. */
export async function secretsFileModeProblem(file: string, fixWhere?: string): Promise<string | undefined> {
  const st = await stat(file).catch(() => undefined);
  if (!st?.isFile() || (st.mode & 0o077) === 0) return undefined;
  return `the secrets file ${file} can be read by others than its owner (mode ${(st.mode & 0o777).toString(8)}): chmod 600 ${fixWhere ?? file}`;
}

export async function readSecretsFile(file: string): Promise<Record<string, string>> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`cannot read the secrets file ${file} (${(err as NodeJS.ErrnoException).code}): check the --secrets-file path`);
  }
  return parseEnv(text) as Record<string, string>;
}
