/**
 * Which credentials an image is pulled with, read as the docker CLI reads
 * them from a docker config.json: the registry an image names (docker.io when
 * it names none), the key the CLI looks it up by, the credential helper that
 * answers for it (`credHelpers`, else `credsStore`) or the file's own entry
 * (`auths`: base64 `auth`, or username and password, or an identity token),
 * and what a pull refused for want of them says. Pure: the file and the
 * helper are read by registry-credentials.ts.
 */

/** The registry of images that name none. */
export const HUB = 'docker.io';
/** The key the docker CLI stores Docker Hub's credentials under, and asks its helpers for. */
export const HUB_KEY = 'https://index.docker.io/v1/';
const HUB_ALIASES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io', 'registry.hub.docker.com']);

/** What the engine is given for a pull (X-Registry-Auth), as the Engine API names its fields. */
export interface AuthConfig {
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
  serveraddress: string;
}

interface AuthEntry {
  auth?: string;
  username?: string;
  password?: string;
  identitytoken?: string;
  registrytoken?: string;
}

/** The parts of a docker config.json that say where credentials are. */
export interface DockerConfig {
  auths: Record<string, AuthEntry>;
  credHelpers: Record<string, string>;
  credsStore?: string;
}

/** Where a registry's credentials come from. */
export type AuthSource =
  | { kind: 'helper'; helper: string; field: 'credHelpers' | 'credsStore'; serverUrl: string }
  | { kind: 'file'; auth: AuthConfig }
  | { kind: 'none' }
  | { kind: 'problem'; problem: string };

/**
 * The registry an image reference names, as the docker CLI normalises it: its
 * first part when that has a dot or a colon, is `localhost` or has a capital;
 * else Docker Hub (docker.io); index.docker.io is docker.io.
 */
export function imageRegistry(image: string): string {
  const slash = image.indexOf('/');
  if (slash < 0) return HUB;
  const first = image.slice(0, slash);
  if (!/[.:]/.test(first) && first !== 'localhost' && first.toLowerCase() === first) return HUB;
  return HUB_ALIASES.has(first.toLowerCase()) ? HUB : first;
}

/** A config key's registry, as the docker CLI reads one: without http(s):// and any path; Hub's names are docker.io. */
export function keyRegistry(key: string): string {
  const host = key.replace(/^https?:\/\//, '').split('/')[0]!;
  return HUB_ALIASES.has(host.toLowerCase()) ? HUB : host;
}

/** The key the docker CLI looks a registry up by, and the server URL it asks a helper for. */
export function configKey(registry: string): string {
  return registry === HUB ? HUB_KEY : registry;
}

/**
 * The value under `registry` in a map keyed as config.json keys it: the exact
 * key first, then any key naming the same registry. Own keys only: an image
 * naming `toString/x` finds no Object.prototype.toString as its helper.
 */
function lookup<T>(map: Record<string, T>, registry: string): T | undefined {
  const exact = Object.hasOwn(map, configKey(registry)) ? map[configKey(registry)] : undefined;
  if (exact !== undefined) return exact;
  const key = Object.keys(map).find((k) => keyRegistry(k) === registry);
  return key === undefined ? undefined : map[key];
}

/**
 * Where JSON.parse stopped, without what it found there: Node 20 quotes the
 * text around it ("root:$y$j9"... for /etc/shadow, ..."auth":SECRET}"...), and
 * a config's text is never said.
 */
function jsonWhere(message: string): string {
  const at = /at position (\d+)/.exec(message);
  if (at) return `it stops at character ${at[1]}`;
  return /Unexpected end/i.test(message) ? 'it ends too soon' : 'it holds something JSON does not allow';
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A docker config.json's credentials part, checked. Throws an Error saying
 * what is wrong and where (never a value from the file). Other fields of the
 * file (proxies, plugins, …) are the docker CLI's and ignored.
 */
export function parseDockerConfig(text: string, file: string): DockerConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new Error(`${file} is not JSON (${jsonWhere((err as Error).message)}): it takes the shape of a docker config.json, like {"auths": {"registry.example.com": {"auth": "BASE64(user:password)"}}}`);
  }
  if (!isObject(raw)) throw new Error(`${file} holds no JSON object: it takes the shape of a docker config.json, like {"auths": {"registry.example.com": {"auth": "BASE64(user:password)"}}}`);
  const auths: Record<string, AuthEntry> = {};
  if (raw.auths !== undefined) {
    if (!isObject(raw.auths)) throw new Error(`${file}: "auths" is not an object of registries`);
    for (const [key, entry] of Object.entries(raw.auths)) {
      if (!isObject(entry)) throw new Error(`${file}: auths["${key}"] is not an object`);
      const e: AuthEntry = {};
      for (const field of ['auth', 'username', 'password', 'identitytoken', 'registrytoken'] as const) {
        const v = entry[field];
        if (v === undefined || v === null || v === '') continue;
        if (typeof v !== 'string') throw new Error(`${file}: auths["${key}"].${field} is not a string`);
        e[field] = v;
      }
      own(auths, key, e);
    }
  }
  const credHelpers: Record<string, string> = {};
  if (raw.credHelpers !== undefined) {
    if (!isObject(raw.credHelpers)) throw new Error(`${file}: "credHelpers" is not an object of registries and helper names`);
    for (const [key, name] of Object.entries(raw.credHelpers)) {
      if (typeof name !== 'string' || !helperNameOk(name)) throw new Error(`${file}: credHelpers["${key}"] is not a helper's name (NAME for docker-credential-NAME)`);
      own(credHelpers, key, name);
    }
  }
  let credsStore: string | undefined;
  if (raw.credsStore !== undefined && raw.credsStore !== '') {
    if (typeof raw.credsStore !== 'string' || !helperNameOk(raw.credsStore)) throw new Error(`${file}: "credsStore" is not a helper's name (NAME for docker-credential-NAME)`);
    credsStore = raw.credsStore;
  }
  return { auths, credHelpers, ...(credsStore ? { credsStore } : {}) };
}

/** `map[key] = value` as an own property, even for the key "__proto__" (which plain assignment takes as the map's prototype). */
function own<T>(map: Record<string, T>, key: string, value: T): void {
  Object.defineProperty(map, key, { value, enumerable: true, writable: true, configurable: true });
}

const helperNameOk = (name: string) => /^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name);

/**
 * Where `registry`'s credentials come from, in the docker CLI's order: a
 * helper in `credHelpers` for it, else the `credsStore` helper, else the
 * file's `auths` entry for it, else none. `file` names the config in what is said.
 */
export function authSource(config: DockerConfig, registry: string, file: string): AuthSource {
  const serverUrl = configKey(registry);
  const own = lookup(config.credHelpers, registry);
  if (own) return { kind: 'helper', helper: own, field: 'credHelpers', serverUrl };
  if (config.credsStore) return { kind: 'helper', helper: config.credsStore, field: 'credsStore', serverUrl };
  const entry = lookup(config.auths, registry);
  if (!entry) return { kind: 'none' };
  const auth: AuthConfig = { serveraddress: serverUrl };
  if (entry.auth) {
    const decoded = decodeAuth(entry.auth);
    if (!decoded) return { kind: 'problem', problem: `the "auth" of ${registry} in ${file} is not base64 of USER:PASSWORD: log in again (${loginCommand(registry)}), or write it anew` };
    Object.assign(auth, decoded);
  } else {
    if (entry.username) auth.username = entry.username;
    if (entry.password) auth.password = entry.password;
  }
  if (entry.identitytoken) auth.identitytoken = entry.identitytoken;
  if (entry.registrytoken) auth.registrytoken = entry.registrytoken;
  return Object.keys(auth).length > 1 ? { kind: 'file', auth } : { kind: 'none' };
}

function decodeAuth(b64: string): { username: string; password: string } | undefined {
  if (!/^[A-Za-z0-9+/=_-]+$/.test(b64.trim())) return undefined;
  const text = Buffer.from(b64.trim(), 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return undefined;
  return { username: text.slice(0, colon), password: text.slice(colon + 1).replace(/\0+$/, '') };
}

/** The docker CLI's token user: a helper answering with it hands an identity token, not a password. */
const TOKEN_USER = '<token>';

/** A helper's answer to `get` (its JSON on stdout), as the engine takes it; undefined when it is not that JSON. */
export function helperAnswer(stdout: string, serverUrl: string): AuthConfig | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(stdout);
  } catch {
    return undefined;
  }
  if (!isObject(raw) || typeof raw.Secret !== 'string') return undefined;
  const username = typeof raw.Username === 'string' ? raw.Username : '';
  if (username === TOKEN_USER) return { identitytoken: raw.Secret, serveraddress: serverUrl };
  return { username, password: raw.Secret, serveraddress: serverUrl };
}

/** A helper's failure that means "I have nothing for it" (the docker CLI then pulls without credentials). */
export function helperHasNone(output: string): boolean {
  return /credentials not found in native keychain/i.test(output);
}

/**
 * What a helper that failed said, fit to repeat: the first line of its stderr,
 * else of its stdout (docker's own helpers say their errors there), at most
 * 200 characters; never a line that carries its answer's JSON or the Secret
 * it answered with, which would put the credential in a step's log and the
 * run's record. Undefined: nothing fit to repeat.
 */
export function helperSaid(stdout: string, stderr: string): string | undefined {
  const secret = secretIn(stdout);
  for (const text of [stderr, stdout]) {
    const line = text.trim().split('\n')[0]!.trim();
    if (!line) continue;
    if (/^[{[]|"Secret"/i.test(line) || (secret && line.includes(secret))) return 'what it printed is not repeated here: it may hold the credential';
    return line.slice(0, 200);
  }
  return undefined;
}

/** The Secret of a helper's JSON answer, if its stdout holds one. */
function secretIn(stdout: string): string | undefined {
  try {
    const raw: unknown = JSON.parse(stdout);
    return isObject(raw) && typeof raw.Secret === 'string' && raw.Secret ? raw.Secret : undefined;
  } catch {
    return undefined;
  }
}

/** How to log in to `registry` with the docker CLI. */
export function loginCommand(registry: string): string {
  return registry === HUB ? 'docker login' : `docker login ${registry}`;
}

/** An engine's failure of its plain-http attempt, after https, at a registry it takes as insecure. */
const FALLBACK = /HTTP request to an HTTPS server|server gave HTTP response to HTTPS client/i;

/**
 * A pull's failure that is the registry refusing it for want of (good)
 * credentials. Without credentials, an engine that falls back from https to
 * plain http for a registry it takes as insecure (127.0.0.0/8, its
 * insecure-registries) reports the http attempt's failure instead of the 401.
 */
export function isAuthRefusal(message: string, hadCredentials: boolean): boolean {
  if (/unauthori[sz]ed|authentication required|no basic auth credentials|access.{0,20}denied|denied:|\b401\b|may require 'docker login'/i.test(message)) return true;
  return !hadCredentials && FALLBACK.test(message);
}

/** The engine's words without dockerode's "(HTTP code 500) server error - " before them. */
export function engineReason(message: string): string {
  return message.split('\n')[0]!.replace(/^\(HTTP code \d+\)[^-]*- /, '').trim();
}

/** Where the credentials were looked for: the docker client's config file, or the --registry-auth file that stands in for it. */
export interface AuthPlace {
  configFile: string;
  /** the file is --registry-auth's */
  fromFlag: boolean;
}

/**
 * What a pull refused for want of credentials says: the image, the registry,
 * what was tried, and how to log in. `from`: where the credentials it was sent
 * came from (none: undefined); `problem`: why none could be had (a helper that failed).
 */
export function pullRefused(image: string, registry: string, reason: string, place: AuthPlace, from?: string, problem?: string): string {
  const login = place.fromFlag
    ? `give ${registry}'s credentials in ${place.configFile} (--registry-auth; a docker config.json: \`${loginCommand(registry)}\` writes them to ~/.docker/config.json, or to its credential helper)`
    : `log in with \`${loginCommand(registry)}\` (the runner reads what the docker client reads: ${place.configFile} and its credential helpers), or give a docker config.json that has them with --registry-auth FILE`;
  if (problem) return `the registry ${registry} refused to give ${image} without credentials, and none could be had: ${problem}. Then ${login}`;
  if (from) return `the registry ${registry} refused the credentials for it from ${from} to pull ${image} (${reason}): ${login.replace(/^log in/, 'log in again')}`;
  // Docker Hub says this of a repository that does not exist too: which of the two, it does not tell
  if (/does not exist or may require/i.test(reason)) return `the registry ${registry} gives no ${image} without credentials: it does not exist there, or it needs them (the engine said: ${reason}): check the image's name, or ${login}`;
  // an engine that fell back to plain http says that attempt's failure, not the registry's 401: not worth repeating
  const said = FALLBACK.test(reason) ? '' : ` (the engine said: ${reason})`;
  return `the registry ${registry} wants credentials to pull ${image}, and the runner has none for it${said}: ${login}`;
}
