/**
 * bench/gvisor: what `isolation: gvisor` costs, against runc, in the same run:
 * the same `runner exec` with `--isolation gvisor` and with `--isolation runc`,
 * alternated. Three kinds of work:
 *   - five trivial steps (the sandbox's start, five times);
 *   - a one-step claude-code pipeline, gateway included, to the CLI's first
 *     model request (a Node CLI starting inside the sandbox);
 *   - `npm test` of a fixture project of our own: 40 modules and 40 test
 *     files run by `node --test` (many processes, files and syscalls).
 * Each prints the ratio of medians, gVisor to runc.
 *
 *   make bench            (or: node dist/bench/gvisor.js [ROUNDS])
 */
import { spawn } from 'node:child_process';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ModelServer } from '../test/fixtures/model-server.js';
import { CLI, git, makeProject, writePipeline, type Fixture } from '../test/fixtures/project.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const KEY = 'sk-ant-bench-not-a-key-000000000000';
const ISOLATIONS = ['gvisor', 'runc'] as const;

function exec(file: string, f: Fixture, isolation: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const c = spawn(process.execPath, [CLI, 'exec', file, '--home', f.home, '--isolation', isolation], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ANTHROPIC_API_KEY: KEY, CI: 'true' } });
    let err = '';
    c.stderr.on('data', (b: Buffer) => (err = (err + b.toString()).slice(-4000)));
    c.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`runner exec --isolation ${isolation} exited ${code}:\n${err}`))));
  });
}

/** Medians per isolation of `measure`, alternated, after one warm-up of each. */
async function alternate(measure: (isolation: string) => Promise<number>): Promise<Record<string, number[]>> {
  const times: Record<string, number[]> = { gvisor: [], runc: [] };
  for (const iso of ISOLATIONS) await measure(iso);
  for (let i = 0; i < ROUNDS; i++) for (const iso of ISOLATIONS) times[iso]!.push(await measure(iso));
  return times;
}

function row(bench: string, aim: string, what: string, t: Record<string, number[]>): void {
  const [g, r] = [median(t.gvisor!), median(t.runc!)];
  report({ bench, against: 'the same under runc', aim, ratio: g / r, detail: `${what}: gVisor ${g.toFixed(0)} ms, runc ${r.toFixed(0)} ms (medians of ${ROUNDS}; gVisor ${t.gvisor!.map((x) => x.toFixed(0)).join(' ')})` });
}

async function wholeRun(file: string, f: Fixture, iso: string): Promise<number> {
  const t0 = performance.now();
  await exec(file, f, iso);
  return performance.now() - t0;
}

/** Milliseconds from spawning the run to the model's first agent request; then waits for the run to end. */
async function toFirstRequest(server: ModelServer, file: string, f: Fixture, iso: string): Promise<number> {
  const before = server.agentRequests().length;
  const t0 = performance.now();
  let done = false;
  const run = exec(file, f, iso).finally(() => (done = true));
  let at: number | undefined;
  while (at === undefined && !done) {
    if (server.agentRequests().length > before) at = performance.now() - t0;
    else await new Promise((r) => setTimeout(r, 5));
  }
  await run;
  if (at === undefined) throw new Error(`the ${iso} run ended before its first model request`);
  return at;
}

/** A project of our own with a real test suite: modules that require each other, a test file each. */
async function testSuiteProject(f: Fixture): Promise<void> {
  const dir = f.project;
  await mkdir(path.join(dir, 'lib'), { recursive: true });
  await mkdir(path.join(dir, 'test'), { recursive: true });
  for (let i = 0; i < 40; i++) {
    const dep = i > 0 ? `const prev = require('./m${i - 1}.js');\n` : 'const prev = { sum: (xs) => xs.reduce((a, b) => a + b, 0) };\n';
    await writeFile(path.join(dir, 'lib', `m${i}.js`), `${dep}exports.sum = (xs) => prev.sum(xs);\nexports.words = (s) => s.split(/\\s+/).filter(Boolean).map((w) => w.toLowerCase()).sort();\n`);
    await writeFile(
      path.join(dir, 'test', `m${i}.test.js`),
      `const test = require('node:test');\nconst assert = require('node:assert');\nconst fs = require('node:fs');\nconst os = require('node:os');\nconst path = require('node:path');\nconst m = require('../lib/m${i}.js');\n` +
        `test('sum', () => assert.strictEqual(m.sum([1, 2, 3, ${i}]), ${6 + i}));\n` +
        `test('words', () => assert.deepStrictEqual(m.words('b A c'), ['a', 'b', 'c']));\n` +
        `test('files', () => { const d = fs.mkdtempSync(path.join(os.tmpdir(), 't')); for (let k = 0; k < 50; k++) fs.writeFileSync(path.join(d, 'f' + k), 'x'.repeat(1000)); assert.strictEqual(fs.readdirSync(d).length, 50); fs.rmSync(d, { recursive: true }); });\n`,
    );
  }
  await writeFile(path.join(dir, 'package.json'), JSON.stringify({ name: 'suite', version: '1.0.0', private: true, scripts: { test: 'node --test test/' } }, null, 2));
  git(dir, 'add', '-A');
  git(dir, 'commit', '-qm', 'a test suite');
}

const f = await makeProject({ remote: false });
const server = await ModelServer.start({ turns: Array.from({ length: 4 * (ROUNDS + 1) }, () => ({ text: 'Done.' })) });
try {
  const trivial = await writePipeline(f, `version: 1\nname: trivial\nproject: { path: project, push: never }\ndefaults: { image: runner/base:latest }\nsteps:\n${[1, 2, 3, 4, 5].map((i) => `  - id: s${i}\n    run: "true"\n`).join('')}`, 'trivial.yaml');
  row('gvisor: five trivial steps', '<= 3', 'runner exec of five trivial steps', await alternate((iso) => wholeRun(trivial, f, iso)));

  const agent = await writePipeline(f, `version: 1\nname: agent\nproject: { path: project, push: never }\nsecrets: [ANTHROPIC_API_KEY]\nagents:\n  a: { use: claude-code, base_url: "${server.url}" }\nsteps:\n  - id: go\n    agent: a\n    prompt: say done\n`, 'agent.yaml');
  row('gvisor: agent start', '<= 2', 'a claude-code step, its gateway included, to the CLI\'s first model request', await alternate((iso) => toFirstRequest(server, agent, f, iso)));

  await testSuiteProject(f);
  const suite = await writePipeline(f, `version: 1\nname: suite\nproject: { path: project, push: never }\nsteps:\n  - id: test\n    image: runner/toolchain:latest\n    run: npm test\n`, 'suite.yaml');
  row('gvisor: npm test', '<= 2', 'npm test of 40 modules and 40 test files (node --test)', await alternate((iso) => wholeRun(suite, f, iso)));
} finally {
  await server.close();
  await f.cleanup();
}
