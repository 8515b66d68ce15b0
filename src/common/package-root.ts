/**
 * The runner's own directory, where its package.json is: found by walking up
 * from this module, so it is the same whether the code runs from tsc's output
 * (dist/src/…) or from the bundle (dist/runner/).
 */
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let found: string | undefined;

export function packageRoot(): string {
  if (found) return found;
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    if (existsSync(path.join(dir, 'package.json'))) return (found = dir);
    if (path.dirname(dir) === dir) throw new Error(`no package.json above ${fileURLToPath(import.meta.url)}: the runner is not installed whole`);
  }
}
