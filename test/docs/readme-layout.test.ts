/**
 * The README's Layout block names every folder of src/, no folder that is
 * gone, and, on each folder's lines, only files that are in that folder.
 */
import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The Layout block's entries: `src/x/` -> the text of its line and the lines indented under it. */
async function layout(): Promise<Map<string, string>> {
  const readme = await readFile(path.join(ROOT, 'README.md'), 'utf8');
  const at = readme.indexOf('\n## Layout\n');
  assert.ok(at >= 0, 'README.md has a "## Layout" section');
  const block = /```[a-z]*\n([\s\S]*?)```/.exec(readme.slice(at))?.[1];
  assert.ok(block, 'the Layout section has a fenced block');
  const entries = new Map<string, string>();
  let current: string | undefined;
  for (const line of block.split('\n')) {
    const m = /^src\/([\w-]+)\/\s/.exec(line);
    if (m) entries.set((current = m[1]!), line.slice(m[0].length));
    else if (current && /^\s+\S/.test(line)) entries.set(current, `${entries.get(current)} ${line.trim()}`);
    else current = undefined;
  }
  return entries;
}

/** The files under dir, by name, at any depth. */
async function filesUnder(dir: string): Promise<Set<string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return new Set(entries.filter((e) => e.isFile()).map((e) => e.name));
}

test("the README's Layout names every folder of src/, and only those", async () => {
  const entries = await layout();
  const folders = (await readdir(path.join(ROOT, 'src'), { withFileTypes: true })).filter((e) => e.isDirectory()).map((e) => e.name);
  assert.ok(folders.includes('cli') && entries.has('cli'), 'both sides are read');
  assert.deepEqual(folders.filter((f) => !entries.has(f)), [], 'folders of src/ the Layout does not name');
  assert.deepEqual([...entries.keys()].filter((f) => !folders.includes(f)), [], 'folders the Layout names that src/ does not have');
});

test("each file the README's Layout names on a folder's lines is in that folder", async () => {
  const missing: string[] = [];
  let checked = 0;
  for (const [folder, text] of await layout()) {
    const here = await filesUnder(path.join(ROOT, 'src', folder)).catch(() => new Set<string>());
    for (const [name] of text.matchAll(/[\w-]+\.(?:ts|js)\b/g)) {
      checked++;
      if (!here.has(name)) missing.push(`src/${folder}/: ${name}`);
    }
  }
  assert.ok(checked > 20, `checked ${checked} names`);
  assert.deepEqual(missing, []);
});
