/**
 * The credentials an image is pulled with, found where the user's docker
 * client finds them: the docker config.json (--registry-auth FILE, else
 * $DOCKER_CONFIG/config.json, else ~/.docker/config.json), read at each pull,
 * and the credential helper it names (`docker-credential-NAME get`, the server
 * URL on its stdin, its JSON on stdout). They go to the engine only, for a pull
 * or a swarm service (X-Registry-Auth): never to a step, a log or a record.
 * The I/O side of registry-auth.ts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, constants as fsConstants, fstatSync, openSync, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { errorMessage } from '../common/errors.js';
import { authSource, helperAnswer, helperHasNone, helperSaid, imageRegistry, parseDockerConfig, type AuthConfig, type AuthPlace, type DockerConfig } from './registry-auth.js';

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

/** A docker config.json, at most: docker's own are a few KiB. */
const CONFIG_MAX_BYTES = 4 << 20;

/**
 * A docker config.json's text. Only a regular file of at most 4 MiB is read:
 * opened without waiting (a FIFO would block the open for good), and a
 * device (/dev/zero, /dev/urandom) or a huge file is refused rather than read
 * until memory runs out. Its errors say the file and what to give; a missing
 * file's keeps its ENOENT code. Sync: the settings check it at start.
 */
export function readConfigFileSync(file: string): string {
  const fd = openSync(file, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  try {
    const st = fstatSync(fd);
    if (st.isDirectory()) throw Object.assign(new Error(`${file} is a directory: give the config.json file in it`), { code: 'EISDIR' });
    if (!st.isFile()) throw new Error(`${file} is not a regular file (a device, FIFO or socket): give a docker config.json`);
    if (st.size > CONFIG_MAX_BYTES) throw new Error(`${file} is ${Math.round(st.size / (1 << 20))} MiB: a docker config.json is a few KiB, and more than ${CONFIG_MAX_BYTES >> 20} MiB is not read`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}

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
    /** how long a helper may take to answer before it is killed */
    private readonly helperTimeoutMs = HELPER_TIMEOUT_MS,
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
      config = parseDockerConfig(readConfigFileSync(file), file);
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
    const got = await runHelper(program, source.serverUrl, this.env, this.helperTimeoutMs);
    if (got.missing) return { registry, problem: `${named} is not on this PATH: install it, or take it out of ${file}` };
    if (got.ended) return { registry, problem: `${named} gave no answer for ${source.serverUrl}: ${got.ended}` };
    if (got.code !== 0) {
      if (helperHasNone(got.stdout + got.stderr)) return { registry, from: named };
      const said = helperSaid(got.stdout, got.stderr) ?? `exit ${got.code}`;
      return { registry, problem: `${named} failed to answer for ${source.serverUrl} (${said})` };
    }
    const auth = helperAnswer(got.stdout, source.serverUrl);
    if (!auth) return { registry, problem: `${named} answered for ${source.serverUrl} with something other than its JSON ({"ServerURL", "Username", "Secret"})` };
    return { registry, authconfig: auth, from: named };
  }
}

/** A helper's answer, at most: a docker helper answers in well under a KiB. */
const HELPER_MAX_OUTPUT = 1 << 20;

interface HelperRun {
  missing: boolean;
  /** its exit code; -1 when it was ended (timed out, or said too much) */
  code: number;
  stdout: string;
  stderr: string;
  /** why it was ended, said plainly */
  ended?: string;
}

/**
 * `PROGRAM get`, `serverUrl` on its stdin, as the docker CLI runs a credential
 * helper. No shell: PROGRAM is looked up on PATH alone. In a process group of
 * its own, so that a helper that hangs (or ignores SIGTERM, or leaves a child
 * holding its stdout) is killed whole, with SIGKILL, after `timeoutMs`, and
 * one that prints more than a MiB is ended as it passes it: a pull waits a
 * bounded time, never for good.
 */
export function runHelper(program: string, serverUrl: string, env: NodeJS.ProcessEnv, timeoutMs = HELPER_TIMEOUT_MS): Promise<HelperRun> {
  return new Promise((resolve) => {
    let done = false;
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    let size = 0;
    let child: ChildProcess;
    const text = (b: Buffer[]) => Buffer.concat(b).toString('utf8');
    const finish = (r: HelperRun) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resolve(r);
    };
    const end = (why: string) => {
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
      child.stdout?.destroy();
      child.stderr?.destroy();
      finish({ missing: false, code: -1, stdout: '', stderr: text(err).slice(0, 4096), ended: why });
    };
    const timer = setTimeout(() => end(`it did not answer in ${Math.round(timeoutMs / 1000)} s and was stopped`), timeoutMs);
    try {
      child = spawn(program, ['get'], { env, detached: true, stdio: ['pipe', 'pipe', 'pipe'] });
    } catch (e) {
      finish({ missing: false, code: -1, stdout: '', stderr: errorMessage(e) });
      return;
    }
    const take = (into: Buffer[]) => (chunk: Buffer) => {
      size += chunk.length;
      if (size > HELPER_MAX_OUTPUT) return end(`it printed more than ${HELPER_MAX_OUTPUT >> 20} MiB and was stopped`);
      into.push(chunk);
    };
    child.stdout!.on('data', take(out));
    child.stderr!.on('data', take(err));
    child.on('error', (e: NodeJS.ErrnoException) => finish({ missing: e.code === 'ENOENT', code: -1, stdout: '', stderr: e.code === 'ENOENT' ? '' : errorMessage(e) }));
    child.on('exit', () => {
      // what it left behind in its group (a child holding its stdout open) goes with it, so that its pipes close
      try {
        if (child.pid) process.kill(-child.pid, 'SIGKILL');
      } catch {
        // none left
      }
    });
    child.on('close', (code, signal) => {
      finish({ missing: false, code: code ?? -1, stdout: text(out), stderr: text(err), ...(signal ? { ended: `it was killed by ${signal}` } : {}) });
    });
    child.stdin!.on('error', () => undefined);
    child.stdin!.end(serverUrl);
  });
}

/** The credentials the docker client on this machine would pull `image` with ($DOCKER_CONFIG, ~/.docker), or a --registry-auth `file`'s. */
export function authFor(image: string, file?: string): Promise<RegistryAuth> {
  return new RegistryCredentials(file).authFor(image);
}
