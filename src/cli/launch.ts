#!/usr/bin/env node
/**
 * The runner's start (dist/runner/main.js): runs the bundle (runner.cjs, scripts/bundle.mjs) compiled through
 * vm.Script with V8's code cache (code-cache.ts), so a start does not parse and compile what an earlier start of
 * the same command did. The cache is made when the command has run (exit 0), so what it compiled lazily is in
 * it too; a start without one (the first, or after a new build) runs as before and writes it.
 */
import { readFileSync } from 'node:fs';
import { createRequire, Module } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { cacheDir, cacheKey, cacheName, commandOf, readCache, writeCache } from './code-cache.js';

const file = fileURLToPath(new URL('./runner.cjs', import.meta.url));
const text = readFileSync(file);
// its #! line (main.ts's) a comment of the same length, inside the function Module.wrap makes of it
const source = text.toString('utf8').replace(/^#!/, '//');
const dir = cacheDir();
const name = cacheName(cacheKey(text), commandOf(process.argv.slice(2)));
const cached = readCache(dir, name);
const script = new vm.Script((Module as unknown as { wrap(s: string): string }).wrap(source), {
  filename: file,
  cachedData: cached,
  // import() in the bundle (node: built-ins) as in any module of the runner's
  importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER,
});
if (cached === undefined || script.cachedDataRejected) {
  process.once('exit', (code) => {
    if (code === 0) writeCache(dir, name, script.createCachedData());
  });
}
const module = { exports: {} };
(script.runInThisContext() as (...a: unknown[]) => void)(module.exports, createRequire(file), module, file, path.dirname(file));
