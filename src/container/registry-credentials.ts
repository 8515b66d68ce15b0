/**
 * The credentials an image is pulled with, found where the user's docker
 * client finds them: the docker config.json (--registry-auth FILE, else
 * $DOCKER_CONFIG/config.json, else ~/.docker/config.json), read at each pull,
 * and the credential helper it names (`docker-credential-NAME get`, the server
 * URL on its stdin, its JSON on stdout). They go to the engine only, for a pull
 * or a swarm service (X-Registry-Auth): never to a step, a log or a record.
 * The I/O side of registry-auth.ts.
 */
import { execFile } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../common/errors.js';
import { authSource, helperAnswer, helperHasNone, imageRegistry, parseDockerConfig, type AuthConfig, type AuthPlace, type DockerConfig } from './registry-auth.js';

export type { AuthConfig } from './registry-auth.js';

/** What a pull of one image is given. */
export interface RegistryAuth {
  /** the registry the image names (docker.io when it names none) */
  registry: string;
  /** what the engine is sent; absent: no credentials (an anonymous pull) */
  authconfig?: AuthConfig;
  /** where they came from, for what is said (a file, or a helper): never the credentials */
  from?: string;
  /** why none could be had (a helper missing or failing, a file that cannot be read) */
  problem?: string;
}

const HELPER_TIMEOUT_MS = 30_000;

/** The docker client's config file: $DOCKER_CONFIG/config.json, else ~/.docker/config.json. */
export function dockerConfigFile(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(env.DOCKER_CONFIG || path.join(env.HOME || os.homedir(), '.docker'), 'config.json');
}

export class RegistryCredentials {
  /**
   * `file`: the --registry-auth file, which stands in for the docker client's
   * config; absent: the docker client's own. `env`: where DOCKER_CONFIG,
   * HOME and the helpers' PATH are read (the runner's own environment).
   */
  constructor(
    private readonly file?: string,
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /** The config file the credentials are read from. */
  configFile(): string {
    return this.file ?? dockerConfigFile(this.env);
  }

  /** Where credentials are looked for, for what is said. */
  place(): AuthPlace {
    return { configFile: this.configFile(), fromFlag: this.file !== undefined };
  }

  /** The credentials `image`'s registry is asked with. Never throws: what went wrong is its `problem`. */
  async authFor(image: string): Promise<RegistryAuth> {
    const registry = imageRegistry(image);
    const file = this.configFile();
    let config: DockerConfig;
    try {
      config = parseDockerConfig(await readFile(file, 'utf8'), file);
    } catch (err) {
      // the docker client's own file need not exist (no login yet); a --registry-auth file must
      if ((err as NodeJS.ErrnoException).code === 'ENOENT' && !this.file) return { registry };
      const why = (err as NodeJS.ErrnoException).code ? `${file} cannot be read (${errorMessage(err)})` : errorMessage(err);
      return { registry, problem: why };
    }
    const source = authSource(config, registry, file);
    if (source.kind === 'none') return { registry };
    if (source.kind === 'problem') return { registry, problem: source.problem };
    if (source.kind === 'file') return { registry, authconfig: source.auth, from: file };
    const program = `docker-credential-${source.helper}`;
    const named = `the credential helper ${program} (${source.field} in ${file})`;
    const got = await runHelper(program, source.serverUrl, this.env);
    if (got.missing) return { registry, problem: `${named} is not on this PATH: install it, or take it out of ${file}` };
    if (got.code !== 0) {
      if (helperHasNone(got.stdout + got.stderr)) return { registry, from: named };
      const said = firstLine(got.stderr) || firstLine(got.stdout) || `exit ${got.code}`;
      return { registry, problem: `${named} failed to answer for ${source.serverUrl} (${said})` };
    }
    const auth = helperAnswer(got.stdout, source.serverUrl);
    if (!auth) return { registry, problem: `${named} answered for ${source.serverUrl} with something other than its JSON ({"ServerURL", "Username", "Secret"})` };
    return { registry, authconfig: auth, from: named };
  }
}

const firstLine = (s: string) => s.trim().split('\n')[0]!.trim().slice(0, 200);

/** `PROGRAM get`, `serverUrl` on its stdin, as the docker CLI runs a credential helper. */
function runHelper(program: string, serverUrl: string, env: NodeJS.ProcessEnv): Promise<{ missing: boolean; code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(program, ['get'], { env, timeout: HELPER_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: string | number }) | null;
      if (e?.code === 'ENOENT') return resolve({ missing: true, code: -1, stdout: '', stderr: '' });
      const code = e ? (typeof e.code === 'number' ? e.code : 1) : 0;
      resolve({ missing: false, code, stdout: String(stdout), stderr: String(stderr) || (e && typeof e.code !== 'number' ? errorMessage(e) : '') });
    });
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(serverUrl);
  });
}

/** The credentials the docker client on this machine would pull `image` with ($DOCKER_CONFIG, ~/.docker), or a --registry-auth `file`'s. */
export function authFor(image: string, file?: string): Promise<RegistryAuth> {
  return new RegistryCredentials(file).authFor(image);
}
