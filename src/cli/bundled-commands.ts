/**
 * commands.ts as the runner's bundle has it: main.ts's import of './commands.js' is this module in the start
 * (dist/runner/main.js, scripts/bundle.mjs), which runs the bundle (runner.cjs) compiled through vm.Script with
 * V8's code cache (code-cache.ts), so a start does not parse and compile what an earlier start of the same
 * command did. The cache is made when the command has run (exit 0), so what it compiled lazily is in it too; a
 * start without one (the first of a command after a build, or with no cache directory it can use) compiles the
 * bundle as Node would, and writes it.
 */
import { readFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import * as closedPipe from './closed-pipe.js';
import { cacheDir, cacheKey, cacheName, commandOf, readCache, writeCache } from './code-cache.js';
import type * as Commands from './commands.js';

function load(): typeof Commands {
  const file = fileURLToPath(new URL('./runner.cjs', import.meta.url));
  const text = readFileSync(file);
  const dir = cacheDir();
  const name = cacheName(cacheKey(text), commandOf(process.argv.slice(2)));
  const cached = readCache(dir, name);
  const script = new vm.Script((Module as unknown as { wrap(s: string): string }).wrap(text.toString('utf8')), {
    filename: file,
    cachedData: cached,
    // an import() in the bundle (none now: esbuild made them requires) as in any module of the runner's
    importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
  });
  if (cached === undefined || script.cachedDataRejected) {
    process.once('exit', (code) => {
      if (code === 0) writeCache(dir, name, script.createCachedData());
    });
  }
  const module = { exports: {} };
  (script.runInThisContext() as (...a: unknown[]) => void)(module.exports, bundleRequire(file), module, file, path.dirname(file));
  return module.exports as typeof Commands;
}

/** The bundle's require: its own, and the modules it shares with the start (whose state is one) as runner:NAME. */
function bundleRequire(file: string): NodeJS.Require {
  const own = createRequire(file);
  const shared: Record<string, unknown> = { 'runner:closed-pipe': closedPipe };
  return Object.assign((id: string) => (Object.hasOwn(shared, id) ? shared[id] : own(id)), own);
}

const bundle = load();
export const COMMANDS = bundle.COMMANDS;
export const errorTools = bundle.errorTools;
