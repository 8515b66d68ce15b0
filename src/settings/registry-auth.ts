/**
 * `--registry-auth FILE` (else RUNNER_REGISTRY_AUTH): a docker config.json the
 * runner pulls images with instead of the docker client's own. Checked once,
 * at start (it exists, is this user's to read, and has the shape of a docker
 * config.json); its credentials are read again at each pull, never kept in
 * the settings (only its path is).
 */
import path from 'node:path';
import { errorMessage, UsageError } from '../common/errors.js';
import { parseDockerConfig } from '../container/registry-auth.js';
import { readConfigFileSync } from '../container/registry-credentials.js';

/** The file's absolute path, checked; undefined when neither the flag nor the variable names one. */
export function readRegistryAuth(flag: string | undefined, env: NodeJS.ProcessEnv): string | undefined {
  const given = flag || env.RUNNER_REGISTRY_AUTH || undefined;
  if (!given) return undefined;
  const name = flag ? '--registry-auth' : 'RUNNER_REGISTRY_AUTH';
  const file = path.resolve(given);
  let text: string;
  try {
    text = readConfigFileSync(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new UsageError(`${name}: ${file} does not exist: give a docker config.json (like ~/.docker/config.json after docker login)`);
    if (code === 'EISDIR') throw new UsageError(`${name}: ${file} is a directory: give the config.json file in it`);
    if (!code) throw new UsageError(`${name}: ${errorMessage(err)}`);
    throw new UsageError(`${name}: ${file} cannot be read by this user (${errorMessage(err)})`);
  }
  try {
    parseDockerConfig(text, file);
  } catch (err) {
    throw new UsageError(`${name}: ${errorMessage(err)}`);
  }
  return file;
}
