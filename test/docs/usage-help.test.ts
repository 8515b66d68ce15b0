/**
 * The README's Usage block and `runner --help` name the same commands, each
 * with the same flags. Both are parsed: help's usage lines are those indented
 * two spaces that start with `runner` (and the lines indented deeper that go
 * on with `[`), its option lines those that start with `--` under them.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

const DIST = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README = path.resolve(DIST, '../README.md');
const RUNNER = path.join(DIST, 'runner/main.js');

type Commands = Map<string, Set<string>>;

/** `runner task ls [--json]` -> "task ls"; `runner --help | -h` -> "" (the runner itself). */
function commandOf(usage: string): string {
  const words = usage.trim().split(/\s+/).slice(1);
  const name: string[] = [];
  for (const w of words) {
    if (!/^[a-z][a-z-]*$/.test(w)) break;
    name.push(w);
  }
  return name.join(' ');
}

/** Every flag a usage names: --long and -s, wherever it stands ([--a X [--b Y]], --x | -y). */
function flagsOf(usage: string): string[] {
  return [...usage.matchAll(/(?:^|[\s[|])(--?[a-z][a-z0-9-]*)/g)].map((m) => m[1]!);
}

/** Usages (each a command line with its continuation lines) into command -> flags. */
function collect(usages: string[]): Commands {
  const out: Commands = new Map();
  for (const u of usages) {
    const name = commandOf(u);
    const flags = out.get(name) ?? new Set<string>();
    for (const f of flagsOf(u)) flags.add(f);
    out.set(name, flags);
  }
  return out;
}

/** Help's usages: `  runner ...` lines, cut where their two-space description starts, with their `[` continuations. */
function helpUsages(help: string): string[] {
  const usages: string[] = [];
  let inUsage = false;
  for (const line of help.split('\n')) {
    const head = line.trim().split(/\s{2,}/)[0]!;
    if (/^ {2}runner /.test(line)) usages.push(head);
    else if (inUsage && /^ {3,}\[/.test(line)) usages[usages.length - 1] += ` ${head}`;
    else {
      inUsage = false;
      continue;
    }
    inUsage = true;
  }
  return usages;
}

/** Help's option lines (`        --json   print ...`, `--npm-registry URL, --pip-index URL  ...`): the flags they describe. */
function helpOptionFlags(help: string): string[] {
  return help
    .split('\n')
    .filter((l) => /^ {4,}--[a-z]/.test(l))
    .flatMap((l) => flagsOf(l.trim().split(/\s{2,}/)[0]!));
}

/** The README's Usage block: the first fenced block under `## Usage`; a usage starts with `runner`, goes on with indented lines. */
function readmeUsages(readme: string): string[] {
  const at = readme.indexOf('\n## Usage\n');
  assert.ok(at >= 0, 'README.md has a "## Usage" section');
  const block = /```[a-z]*\n([\s\S]*?)```/.exec(readme.slice(at))?.[1];
  assert.ok(block, 'the Usage section has a fenced block');
  const usages: string[] = [];
  for (const line of block.split('\n')) {
    if (!line.trim()) continue;
    if (/^runner /.test(line)) usages.push(line.trim());
    else if (/^\s+\S/.test(line) && usages.length) usages[usages.length - 1] += ` ${line.trim()}`;
    else assert.fail(`a line of the README's Usage block is neither a usage nor its continuation: ${JSON.stringify(line)}`);
  }
  return usages;
}

async function both(): Promise<{ help: string; helpCommands: Commands; readmeCommands: Commands }> {
  const help = execFileSync(process.execPath, [RUNNER, '--help'], { encoding: 'utf8' });
  const readme = await readFile(README, 'utf8');
  return { help, helpCommands: collect(helpUsages(help)), readmeCommands: collect(readmeUsages(readme)) };
}

test('runner --help parses into its commands: exec, serve, mcp and the others, each with its flags', async () => {
  const { helpCommands } = await both();
  for (const c of ['exec', 'serve', 'mcp', 'runs ls', 'merge', 'images push', '']) assert.ok(helpCommands.has(c), `help names "runner ${c}"`);
  assert.ok(helpCommands.size >= 15, `help names ${helpCommands.size} commands`);
  assert.ok(helpCommands.get('exec')!.has('--json') && helpCommands.get('')!.has('--help'), 'flags are read from continuation lines and from "runner --help | -h"');
});

test("the README's Usage block names every command of runner --help, and no other", async () => {
  const { helpCommands, readmeCommands } = await both();
  const missing = [...helpCommands.keys()].filter((c) => !readmeCommands.has(c));
  const extra = [...readmeCommands.keys()].filter((c) => !helpCommands.has(c));
  assert.deepEqual(missing, [], `in runner --help, missing from the README's Usage: ${missing.map((c) => `runner ${c}`).join(', ')}`);
  assert.deepEqual(extra, [], `in the README's Usage, absent from runner --help: ${extra.map((c) => `runner ${c}`).join(', ')}`);
});

test("each command has the same flags in the README's Usage block as in runner --help", async () => {
  const { helpCommands, readmeCommands } = await both();
  const problems: string[] = [];
  for (const [command, helpFlags] of helpCommands) {
    const readmeFlags = readmeCommands.get(command) ?? new Set<string>();
    const missing = [...helpFlags].filter((f) => !readmeFlags.has(f));
    const extra = [...readmeFlags].filter((f) => !helpFlags.has(f));
    if (missing.length) problems.push(`runner ${command}: ${missing.join(' ')} in --help, not in the README's Usage`);
    if (extra.length) problems.push(`runner ${command}: ${extra.join(' ')} in the README's Usage, not in --help`);
  }
  assert.deepEqual(problems, []);
});

test("every option runner --help describes is in the README's Usage block", async () => {
  const { help, readmeCommands } = await both();
  const all = new Set([...readmeCommands.values()].flatMap((s) => [...s]));
  const described = helpOptionFlags(help);
  assert.ok(described.includes('--egress-network'), 'the option lines are read');
  assert.deepEqual(described.filter((f) => !all.has(f)), []);
});
