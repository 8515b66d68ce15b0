/**
 * The caches the runner knows by name: where each is mounted in a step and
 * the tool's own setting that points the tool there. Pure.
 *
 * A cache is mounted outside the step's home (under /var/cache/runner): a
 * mount point under $HOME would make the engine create ~/.cache as root, and
 * a tool that writes its own things there would then fail.
 */

/** Where caches are mounted in a step, one directory each. */
export const CACHE_MOUNT_ROOT = '/var/cache/runner';

export interface Ecosystem {
  /** one line for the docs and `runner cache ls` */
  what: string;
  /** the tool's settings, given the directory the cache is mounted at */
  env: (dir: string) => Record<string, string>;
}

export const ECOSYSTEMS: Readonly<Record<string, Ecosystem>> = {
  // npm's cache (cacache): tarballs and registry answers, content-addressed.
  npm: { what: 'npm (npm_config_cache)', env: (dir) => ({ npm_config_cache: dir }) },
  // pip's HTTP cache and the wheels it built.
  pip: { what: 'pip (PIP_CACHE_DIR)', env: (dir) => ({ PIP_CACHE_DIR: dir }) },
  // pnpm reads npm's configuration, environment included: its content-addressed store.
  pnpm: { what: 'pnpm (npm_config_store_dir)', env: (dir) => ({ npm_config_store_dir: dir }) },
  // Yarn 1 reads YARN_CACHE_FOLDER; Yarn 2+ keeps its cache in the global folder unless told otherwise.
  yarn: { what: 'yarn (YARN_CACHE_FOLDER, YARN_GLOBAL_FOLDER)', env: (dir) => ({ YARN_CACHE_FOLDER: dir, YARN_GLOBAL_FOLDER: `${dir}/berry` }) },
};

export const ECOSYSTEM_NAMES = Object.keys(ECOSYSTEMS);

/** A cache's name: a directory name in the runner home, and part of a mount path. */
export const CACHE_NAME_RE = /^[a-z0-9][a-z0-9_-]{0,39}$/;

/** Without `max:`, a cache is pruned back once it passes this. */
export const DEFAULT_CACHE_MAX_BYTES = 2 * 1024 ** 3;
