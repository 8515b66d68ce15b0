/**
 * Every relative link in README.md and docs/*.md leads somewhere: to a file
 * or folder that exists and, when it names an anchor (#x), to a heading of
 * that markdown file (GitHub's anchors: lowercased, punctuation dropped,
 * spaces as hyphens, a repeated heading numbered -1, -2). And every file of
 * this repository the docs name in code (`src/run/run-step.ts`,
 * `test/safety/`, or a module by its folder under src: `serve/api.ts`) is
 * there, so a module that moves takes its mentions with it.
 */
import assert from 'node:assert/strict';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** The text outside fenced code blocks (a `# comment` in a shell block is no heading, a `[x](y)` in YAML no link). */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');
}

/** GitHub's anchor of a heading's text. */
function slug(heading: string): string {
  return heading
    .replace(/`/g, '')
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  for (const m of prose(markdown).matchAll(/^#{1,6} +(.+?) *#* *$/gm)) {
    const base = slug(m[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    out.add(n ? `${base}-${n}` : base);
  }
  return out;
}

/** Inline links and images, `[text](target)` and `[text](target "title")`, outside code blocks and code spans. */
function linksOf(markdown: string): string[] {
  const text = prose(markdown).replace(/`[^`\n]*`/g, '');
  return [...text.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((m) => m[1]!);
}

async function markdownFiles(): Promise<string[]> {
  const docs = (await readdir(path.join(ROOT, 'docs'))).filter((f) => f.endsWith('.md')).map((f) => path.join('docs', f));
  return ['README.md', ...docs.sort()];
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

test('the anchors are GitHub\'s: punctuation dropped, spaces as hyphens, repeats numbered, code blocks skipped', () => {
  const md = '# The gateway: egress, keys and budgets\n## `runner serve`: the API\n```sh\n# not a heading\n```\n## Limits\n## Limits\n';
  assert.deepEqual([...anchorsOf(md)], ['the-gateway-egress-keys-and-budgets', 'runner-serve-the-api', 'limits', 'limits-1']);
  assert.deepEqual(linksOf('see [a](docs/a.md#x), `[b](nope.md)`, ![c](img.png "t") and [d](https://example.com)'), ['docs/a.md#x', 'img.png', 'https://example.com']);
});

test('every relative link in README.md and docs/*.md points to a file that exists, and to a heading of it when it names one', async () => {
  const files = await markdownFiles();
  assert.ok(files.length > 5, `found ${files.join(', ')}`);
  const anchors = new Map<string, Set<string>>();
  const anchorsIn = async (file: string) => {
    if (!anchors.has(file)) anchors.set(file, anchorsOf(await readFile(file, 'utf8')));
    return anchors.get(file)!;
  };
  const broken: string[] = [];
  let checked = 0;
  for (const rel of files) {
    const from = path.join(ROOT, rel);
    for (const link of linksOf(await readFile(from, 'utf8'))) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: ...
      checked++;
      const [target = '', anchor] = link.split('#', 2);
      const file = target ? path.resolve(path.dirname(from), decodeURIComponent(target)) : from;
      if (!(await exists(file))) {
        broken.push(`${rel}: ${link} (no ${path.relative(ROOT, file)})`);
        continue;
      }
      if (anchor && file.endsWith('.md') && !(await anchorsIn(file)).has(anchor)) broken.push(`${rel}: ${link} (no heading #${anchor} in ${path.relative(ROOT, file)})`);
    }
  }
  assert.ok(checked > 20, `checked ${checked} links`);
  assert.deepEqual(broken, []);
});

/** The repository paths named in code spans: `src/x/y.ts`, `test/safety/`, `scripts/swarm-lab.sh`, and `x/y.ts` for a folder x of src/. */
async function namedPaths(markdown: string): Promise<string[]> {
  const out: string[] = [];
  for (const m of prose(markdown).matchAll(/`([\w.-]+(?:\/[\w.-]+)+\/?)`/g)) {
    const p = m[1]!;
    const first = p.split('/')[0]!;
    if (['src', 'test', 'scripts', 'images', 'bench', 'pipelines', 'docs'].includes(first)) {
      if (/\.(ts|js|mjs|sh|md|yaml|yml|json|c)$|\/$/.test(p)) out.push(p); // not src/pip/_internal/...py, a tool's own path
    } else if (/\.(ts|js)$/.test(p) && (await exists(path.join(ROOT, 'src', first)))) out.push(`src/${p}`);
  }
  return out;
}

test('every file of this repository that README.md and docs/*.md name in code is there', async () => {
  const missing: string[] = [];
  let checked = 0;
  for (const rel of await markdownFiles()) {
    for (const p of await namedPaths(await readFile(path.join(ROOT, rel), 'utf8'))) {
      checked++;
      if (!(await exists(path.join(ROOT, p)))) missing.push(`${rel}: ${p}`);
    }
  }
  assert.ok(checked > 20, `checked ${checked} paths`);
  assert.deepEqual(missing, []);
});
