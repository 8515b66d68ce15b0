/**
 * The installed-tree cache, inside a step (CommonJS, run by the image's own node): `npm ci`, and `npm install`
 * without a lockfile, restore `node_modules` from a tree the runner kept for the same project, lockfile (or, without
 * one, package.json), flags, npm settings, image and node, instead of unpacking every package again; else npm
 * installs as ever, and once it succeeded the step leaves a mark that the runner reads after it (keep.ts): a step
 * the runner trusts to write caches has its tree kept. The trees are mounted read-only: no step writes them.
 *
 * Reached through the `npm` the runner puts first on the step's PATH (files.ts), for install commands only.
 * RUNNER_NPM_TREE=off runs npm's own. docs/pipeline-format.md#the-installed-tree-npm.
 */
import childProcess = require('node:child_process');
import crypto = require('node:crypto');
import fs = require('node:fs');
import os = require('node:os');
import path = require('node:path');

/** a tree kept for a project without a lockfile is used this long: after it, npm resolves the ranges afresh */
const MANIFEST_TTL_MS = 24 * 3600 * 1000;
/** npm settings that do not change what is installed */
const IRRELEVANT = new Set(['cache', 'loglevel', 'fund', 'audit', 'progress', 'update_notifier', 'color', 'userconfig', 'globalconfig', 'prefer_offline', 'prefer_online', 'offline', 'yes', 'timing', 'logs_dir', 'logs_max']);
const CI = new Set(['ci', 'clean-install', 'ic', 'install-clean', 'isntall-clean']);
const INSTALL = new Set(['install', 'i', 'in', 'ins', 'inst', 'insta', 'instal', 'isnt', 'isnta', 'isntal', 'isntall']);
/** the root project's scripts npm runs at an install, in its order */
const ROOT_SCRIPTS = ['preinstall', 'install', 'postinstall', 'prepublish', 'preprepare', 'prepare', 'postprepare'];

export interface Files {
  /** package-lock.json or npm-shrinkwrap.json, when the project has one */
  lockfile?: { name: string; bytes: Buffer };
  packageJson?: Buffer;
  npmrc?: Buffer;
  /** the user's npmrc and the global one, as npm would read them: their settings change what it installs too */
  userNpmrc?: Buffer;
  globalNpmrc?: Buffer;
}

export type Decision =
  | { act: 'npm'; why?: string }
  | { act: 'tree'; mode: 'lockfile' | 'manifest'; key: string; parts: { lockSha: string | null; pkgSha: string; npmrcSha: string | null } };

const sha = (b: Buffer | string): string => crypto.createHash('sha256').update(b).digest('hex');

/** What an npm command does here: npm's own, or an install the tree cache answers for under `key`. Pure. */
export function decide(argv: readonly string[], files: Files, env: Readonly<Record<string, string | undefined>>): Decision {
  if ((env.RUNNER_NPM_TREE ?? '').toLowerCase() === 'off') return { act: 'npm' };
  const [command, ...rest] = argv;
  if (command === undefined) return { act: 'npm' };
  const ci = CI.has(command);
  if (!ci && !INSTALL.has(command)) return { act: 'npm' };
  // an install of named packages changes the project: npm's own
  if (rest.some((a) => !a.startsWith('-'))) return { act: 'npm' };
  if (rest.some((a) => /^--?(g|global|prefix|workspaces?|w|location)(=|$)/.test(a))) return { act: 'npm' };
  if (!files.packageJson) return { act: 'npm' };
  let manifest: { workspaces?: unknown };
  try {
    manifest = JSON.parse(files.packageJson.toString('utf8')) as { workspaces?: unknown };
  } catch {
    return { act: 'npm' };
  }
  if (manifest.workspaces !== undefined) return { act: 'npm', why: "a project with workspaces: the installed-tree cache keeps a project's own node_modules only" };
  let mode: 'lockfile' | 'manifest';
  if (files.lockfile) mode = 'lockfile';
  else if (ci) return { act: 'npm' };
  // without a lockfile, only an install that writes none (else the step would commit the one it wrote)
  else if (rest.includes('--no-package-lock') || /^(false|0)$/i.test(env.npm_config_package_lock ?? env.NPM_CONFIG_PACKAGE_LOCK ?? '')) mode = 'manifest';
  else return { act: 'npm' };
  const settings = Object.entries(env)
    .filter((e): e is [string, string] => e[1] !== undefined && /^npm_config_/i.test(e[0]) && !IRRELEVANT.has(e[0].slice(11).toLowerCase().replace(/-/g, '_')))
    .map(([k, v]) => `${k.toLowerCase()}=${v}`)
    .sort();
  const flags = rest.filter((a) => !/^--?(loglevel|no-audit|no-fund|audit|fund|progress|no-progress|prefer-offline|prefer-online|offline|silent|quiet|q|s|d|dd|ddd|verbose|color|no-color)(=|$)/.test(a)).sort();
  const parts = {
    lockSha: files.lockfile ? sha(files.lockfile.bytes) : null,
    pkgSha: sha(files.packageJson),
    npmrcSha: files.npmrc ? sha(files.npmrc) : null,
  };
  // npm omits devDependencies by default when NODE_ENV is production
  const nodeEnv = env.NODE_ENV ?? null;
  const configs = { user: files.userNpmrc ? sha(files.userNpmrc) : null, global: files.globalNpmrc ? sha(files.globalNpmrc) : null };
  const key = sha(JSON.stringify({ v: 1, mode, lock: files.lockfile?.name ?? null, ...parts, ci, flags, settings, nodeEnv, configs, image: env.RUNNER_NPM_TREE_IMAGE ?? '', node: process.version, platform: `${process.platform}-${process.arch}` }));
  return { act: 'tree', mode, key, parts };
}

function readIf(file: string): Buffer | undefined {
  try {
    const st = fs.lstatSync(file);
    return st.isFile() ? fs.readFileSync(file) : undefined;
  } catch {
    return undefined;
  }
}

export function projectFiles(dir: string): Files {
  const lockName = ['npm-shrinkwrap.json', 'package-lock.json'].find((n) => readIf(path.join(dir, n)) !== undefined);
  const lock = lockName ? readIf(path.join(dir, lockName)) : undefined;
  const pkg = readIf(path.join(dir, 'package.json'));
  const npmrc = readIf(path.join(dir, '.npmrc'));
  return { ...(lockName && lock ? { lockfile: { name: lockName, bytes: lock } } : {}), ...(pkg ? { packageJson: pkg } : {}), ...(npmrc ? { npmrc } : {}) };
}

/** The user's and the global npmrc where npm reads them (its settings in the environment, else ~/.npmrc and <node's prefix>/etc/npmrc). */
export function configFiles(env: Readonly<Record<string, string | undefined>>): Pick<Files, 'userNpmrc' | 'globalNpmrc'> {
  const setting = (name: string) => Object.entries(env).find(([k, v]) => v && k.toLowerCase() === `npm_config_${name}`)?.[1];
  const user = setting('userconfig') ?? (env.HOME ? path.join(env.HOME, '.npmrc') : undefined);
  const global = setting('globalconfig') ?? path.join(setting('prefix') ?? path.dirname(path.dirname(process.execPath)), 'etc', 'npmrc');
  // npm follows a linked npmrc (dotfiles often are): so does its key
  const read = (file: string) => {
    try {
      return fs.statSync(file).isFile() ? readIf(fs.realpathSync(file)) : undefined;
    } catch {
      return undefined;
    }
  };
  const userNpmrc = user ? read(user) : undefined;
  const globalNpmrc = read(global);
  return { ...(userNpmrc ? { userNpmrc } : {}), ...(globalNpmrc ? { globalNpmrc } : {}) };
}

/** The real npm: the first on PATH that is not this one (however the PATH spells its directory: a trailing slash, a link). */
export function realNpm(env: Readonly<Record<string, string | undefined>>): string | undefined {
  const own = env.RUNNER_NPM_TREE_BIN ? fileId(path.join(env.RUNNER_NPM_TREE_BIN, 'npm')) : undefined;
  for (const dir of (env.PATH ?? '').split(':')) {
    if (!dir) continue;
    const file = path.join(dir, 'npm');
    if (own !== undefined && fileId(file) === own) continue;
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return file;
    } catch {
      // not here
    }
  }
  return undefined;
}

/** A file's device and inode (links followed), or undefined when there is none. */
function fileId(file: string): string | undefined {
  try {
    const st = fs.statSync(file);
    return `${st.dev}:${st.ino}`;
  } catch {
    return undefined;
  }
}

function say(line: string): void {
  process.stderr.write(`runner: ${line}\n`);
}

function exitOf(r: childProcess.SpawnSyncReturns<Buffer>): number {
  if (r.error) return 127;
  if (r.signal) return 128 + ((os.constants.signals as Record<string, number>)[r.signal] ?? 15);
  return r.status ?? 1;
}

function restore(from: string, to: string): void {
  fs.rmSync(to, { recursive: true, force: true });
  const r = childProcess.spawnSync('cp', ['-a', from, to], { stdio: ['ignore', 'ignore', 'pipe'] });
  if (r.status === 0) return;
  // an image without cp -a (busybox's has it): Node's own copy
  fs.rmSync(to, { recursive: true, force: true });
  fs.cpSync(from, to, { recursive: true, verbatimSymlinks: true, preserveTimestamps: true });
}

function main(): number {
  const argv = process.argv.slice(2);
  const env = process.env;
  const npm = realNpm(env);
  if (!npm) {
    say('npm: not found on the PATH after the runner\'s own');
    return 127;
  }
  const runNpm = (args: string[]) => exitOf(childProcess.spawnSync(npm, args, { stdio: 'inherit' }));
  const cwd = process.cwd();
  const d = decide(argv, { ...projectFiles(cwd), ...configFiles(env) }, env);
  if (d.act === 'npm') {
    if (d.why) say(`npm ${argv[0]}: ${d.why}; npm installs`);
    return runNpm(argv);
  }
  const what = `npm ${argv[0]}`;
  const trees = env.RUNNER_NPM_TREES;
  const tree = trees ? path.join(trees, d.key) : undefined;
  let meta: { createdAt?: string; run?: string; step?: string } | undefined;
  try {
    meta = tree ? (JSON.parse(fs.readFileSync(path.join(tree, 'meta.json'), 'utf8')) as typeof meta) : undefined;
  } catch {
    meta = undefined;
  }
  const made = meta?.createdAt ? Date.parse(meta.createdAt) : NaN;
  const fresh = d.mode === 'lockfile' || (Number.isFinite(made) && Date.now() - made < MANIFEST_TTL_MS);
  if (tree && meta && fresh && fs.existsSync(path.join(tree, 'node_modules'))) {
    const t0 = Date.now();
    try {
      restore(path.join(tree, 'node_modules'), path.join(cwd, 'node_modules'));
    } catch (err) {
      say(`${what}: could not restore node_modules from the installed-tree cache (${err instanceof Error ? err.message : String(err)}); npm installs`);
      return runNpm(argv);
    }
    const basis = d.mode === 'lockfile' ? 'this lockfile' : 'this package.json (no lockfile: kept for 24 h)';
    say(`${what}: node_modules restored from the installed-tree cache for ${basis} in ${((Date.now() - t0) / 1000).toFixed(1)} s (kept by run ${meta.run ?? '?'}, step ${meta.step ?? '?'}, ${meta.createdAt}); npm did not install. RUNNER_NPM_TREE=off runs npm's own`);
    const ignore = argv.includes('--ignore-scripts') || /^(true|1)$/i.test(env.npm_config_ignore_scripts ?? env.NPM_CONFIG_IGNORE_SCRIPTS ?? '');
    if (!ignore) {
      const scripts = (JSON.parse(fs.readFileSync(path.join(cwd, 'package.json'), 'utf8')) as { scripts?: Record<string, unknown> }).scripts ?? {};
      for (const s of ROOT_SCRIPTS) {
        if (typeof scripts[s] !== 'string') continue;
        const code = runNpm(['run', s]);
        if (code !== 0) return code;
      }
    }
    return 0;
  }
  const code = runNpm(argv);
  const mark = env.RUNNER_NPM_TREE_MARK;
  if (code === 0 && mark) {
    try {
      // npm's record of the tree it made: the runner keeps the tree only if nothing changed it after (keep.ts)
      const hidden = readIf(path.join(cwd, 'node_modules', '.package-lock.json'));
      const treeSha = hidden ? sha(hidden) : null;
      fs.writeFileSync(mark, `${JSON.stringify({ key: d.key, mode: d.mode, lockfile: projectFiles(cwd).lockfile?.name ?? null, ...d.parts, treeSha })}\n`);
    } catch {
      // no mark: nothing is kept
    }
  }
  return code;
}

if (require.main === module) process.exitCode = main();
