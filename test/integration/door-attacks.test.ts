/**
 * Attacks on the doors, played for real (real git, real runs, the real CLI
 * as its own process), each an operation's check that no door can skip:
 *   - a door's scope: `runner mcp --project A` and `runner serve` are handed
 *     the ids of runs of a project outside everything they serve (started by
 *     `runner exec` into the same home); every operation on such a run is
 *     refused, saying why, the project's main and checkout stay as they were,
 *     and the listing leaves the runs out. The CLI still serves them.
 *   - what MCP answers carry: a step prints ESC, CR, BS, BEL, a bidi override
 *     and a C1 character, writes them into a file and into for_each items; the
 *     answers a client gets (run_status, run_log, run_diff's files and patch)
 *     stay JSON, and no string the client decodes holds a raw control.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, git, IMAGE, projectsForThisFile, runCli, serveFolder, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
/** the project the doors serve; its home holds every run */
let mine: Fixture;
/** a project outside every --project and pipeline of the doors */
let other: Fixture;
let pipes: string;
let client: Client;
let stderr = '';
/** two runs of `other`'s project, by runner exec into mine's home */
const outside: string[] = [];

const OTHER = `version: 1
name: elsewhere
project: { path: project, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: write
    run: echo elsewhere > out.txt
`;

// A step that prints ESC, CR, BS, BEL, a bidi override (U+202E) and a C1 CSI (U+009B), writes them into a
// file, and makes for_each items of them (the items show in run_status).
const HOSTILE = `version: 1
name: hostile
project: { path: ../project, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: plan
    outputs: [items]
    run: |
      cat >> "$RUNNER_OUTPUT" <<'EOF'
      items=["a\\u001b[31mred\\rb\\bc\\u0007d\\u202ee\\u009bf"]
      EOF
      printf 'esc \\033[31m red\\r cr\\b bs\\a bel \\342\\200\\256 bidi \\302\\233 c1\\n'
      printf 'esc \\033[31m red\\r cr\\b bs\\a bel \\342\\200\\256 bidi \\302\\233 c1\\n' > hostile.txt
  - id: each
    for_each: \${{ steps.plan.outputs.items }}
    run: 'true'
`;

const RAW_CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

type Answer = { isError?: boolean; body: any; text: string };
async function call(c: Client, name: string, args: Record<string, unknown> = {}): Promise<Answer> {
  const r = (await c.callTool({ name, arguments: args }, undefined, { timeout: 180_000 })) as { isError?: boolean; content: Array<{ text: string }> };
  const text = r.content[0]!.text;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { ...(r.isError ? { isError: true } : {}), body, text };
}
const ok = async (c: Client, name: string, args: Record<string, unknown> = {}) => {
  const a = await call(c, name, args);
  assert.ok(!a.isError, `${name} failed: ${a.text}\n${stderr.slice(-3000)}`);
  return a;
};

before(async () => {
  mine = await fixture();
  other = await fixture();
  pipes = path.join(mine.root, 'pipelines');
  await mkdir(pipes);
  await writeFile(path.join(pipes, 'hostile.yaml'), HOSTILE);
  // Two runs of a project runner mcp is not given, started by runner exec into the home it serves.
  const file = await writePipeline(other, OTHER);
  for (let i = 0; i < 2; i++) {
    const r = await runCli(['exec', file, '--json', '--home', mine.home]);
    assert.equal(r.code, 0, r.stderr);
    outside.push(r.json.runId);
  }
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', mine.home, '--pipelines', pipes, '--project', mine.project],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b) => (stderr += b));
  client = new Client({ name: 'door-attacks', version: '1' });
  await client.connect(transport);
});
after(() => client?.close());

test('runner mcp --project A: every operation on a run of a project outside its scope is refused, saying why; main and the checkout are untouched; list_runs leaves it out', async () => {
  const [toMerge, toApply] = outside as [string, string];
  const mainBefore = git(other.project, 'rev-parse', 'main');
  const refusedHere = async (name: string, args: Record<string, unknown>) => {
    const a = await call(client, name, args);
    assert.equal(a.isError, true, `${name} ${JSON.stringify(args)} must be refused: ${a.text}`);
    assert.equal(a.body?.code, 'outside_scope', a.text);
    assert.match(a.body.error, new RegExp(`run ${args.run_id} is of the project ${other.project}, which this server does not serve: runner mcp serves the projects of the pipelines under --pipelines ${pipes} and the projects under --project ${mine.project}`));
  };
  await refusedHere('merge_run', { run_id: toMerge });
  await refusedHere('merge_run', { run_id: toMerge, into: 'main', squash: true });
  assert.equal(git(other.project, 'rev-parse', 'main'), mainBefore, 'main did not move');
  await refusedHere('apply_run', { run_id: toApply });
  assert.equal(git(other.project, 'status', '--porcelain'), '', 'the checkout is clean');
  await assert.rejects(readFile(path.join(other.project, 'out.txt')), /ENOENT/);
  for (const id of outside) {
    await refusedHere('run_status', { run_id: id });
    await refusedHere('run_log', { run_id: id });
    await refusedHere('run_diff', { run_id: id });
    await refusedHere('run_diff', { run_id: id, patch: true });
    await refusedHere('run_diff', { run_id: id, file: 'out.txt' });
    await refusedHere('delivery_preview', { run_id: id });
    await refusedHere('step_transcript', { run_id: id, step: 'write' });
    await refusedHere('wait_for_run', { run_id: id, timeout_seconds: 1 });
    await refusedHere('cancel_run', { run_id: id });
  }
  const listed = (await ok(client, 'list_runs', { limit: 100 })).body.runs.map((r: any) => r.runId);
  for (const id of outside) assert.ok(!listed.includes(id), `list_runs shows ${id}: ${listed.join(', ')}`);
  // as start_agent_task on that project always was
  const task = await call(client, 'start_agent_task', { project: other.project, prompt: 'x' });
  assert.equal(task.body?.code, 'outside_folders');
  // The CLI serves every project of its home: it still reads the run.
  const show = await runCli(['runs', 'show', toMerge, '--home', mine.home]);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /status {5}succeeded/);
});

test('runner serve: its API refuses a run of a project none of its pipelines works on and outside --project (403, with why); the listing leaves it out', async () => {
  const s = await serveFolder(mine, { 'hostile.yaml': HOSTILE }, '127.0.0.1:0');
  try {
    const [toMerge, toApply] = outside as [string, string];
    const mainBefore = git(other.project, 'rev-parse', 'main');
    const refusedHere = async (method: string, route: string, body?: unknown) => {
      const res = await fetch(`${s.base}${route}`, { method, ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}) });
      const text = await res.text();
      assert.equal(res.status, 403, `${method} ${route}: ${text}`);
      const got = JSON.parse(text);
      assert.equal(got.code, 'outside_scope');
      assert.match(got.error, new RegExp(`is of the project ${other.project}, which this server does not serve: runner serve serves the projects of the pipelines in ${pipes}`));
    };
    await refusedHere('POST', `/api/runs/${toMerge}/merge`, {});
    assert.equal(git(other.project, 'rev-parse', 'main'), mainBefore, 'main did not move');
    await refusedHere('POST', `/api/runs/${toApply}/apply`, {});
    assert.equal(git(other.project, 'status', '--porcelain'), '', 'the checkout is clean');
    for (const r of ['', '/diff', '/diff/files', '/delivery', '/log']) await refusedHere('GET', `/api/runs/${toMerge}${r}`);
    await refusedHere('POST', `/api/runs/${toMerge}/cancel`);
    await refusedHere('POST', `/api/runs/${toMerge}/rerun`);
    const listed = (await (await fetch(`${s.base}/api/runs`)).json()) as any[];
    for (const id of outside) assert.ok(!listed.some((r) => r.runId === id), `GET /api/runs shows ${id}`);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test('MCP answers: a step\'s ESC, CR, BS, BEL, bidi and C1 characters reach the client shown, never raw, and every answer stays JSON', async () => {
  const started = (await ok(client, 'start_run', { pipeline: 'hostile' })).body;
  const end = await ok(client, 'wait_for_run', { run_id: started.runId, timeout_seconds: 150 });
  assert.equal(end.body.ended, true, end.text);
  const answers: Array<[string, Answer]> = [
    ['wait_for_run', end],
    ['run_status', await ok(client, 'run_status', { run_id: started.runId })],
    ['run_log', await ok(client, 'run_log', { run_id: started.runId })],
    ['run_diff', await ok(client, 'run_diff', { run_id: started.runId })],
    ['run_diff patch', await ok(client, 'run_diff', { run_id: started.runId, patch: true })],
    ['run_diff file', await ok(client, 'run_diff', { run_id: started.runId, file: 'hostile.txt' })],
    ['list_runs', await ok(client, 'list_runs')],
  ];
  for (const [name, a] of answers) {
    assert.ok(a.body !== undefined, `${name}'s answer is JSON: ${a.text.slice(0, 2000)}`);
    const strings: string[] = [];
    const walk = (v: unknown): void => {
      if (typeof v === 'string') strings.push(v);
      else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) (strings.push(k), walk(x));
    };
    walk(a.body);
    for (const str of strings) assert.doesNotMatch(str, RAW_CONTROL, `${name} carries a raw control in ${JSON.stringify(str)}`);
  }
  const shown = (name: string) => JSON.stringify(answers.find(([n]) => n === name)![1].body);
  for (const name of ['run_log', 'run_diff patch', 'run_diff file']) {
    for (const c of ['\\\\x1b[31m', '\\\\r', '\\\\x08', '\\\\x07', '\\\\u202e', '\\\\x9b']) assert.match(shown(name), new RegExp(c.replace(/\[/g, '\\[')), `${name} shows ${c}`);
  }
  assert.equal(end.body.status, 'succeeded', end.text);
  assert.match(shown('run_status'), /a\\\\x1b\[31mred\\\\rb\\\\x08c\\\\x07d\\\\u202ee\\\\x9bf/, 'the for_each item, shown');
});
