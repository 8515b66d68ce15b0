/**
 * More attacks on the doors, played for real (real git, real runs by the
 * real CLI as its own process, runner mcp over stdio, runner serve's API):
 *   - scope by path: a project beside a --project folder whose name starts
 *     the same (`/x/projects` vs `/x/projects-evil`), a symlink inside the
 *     folder that leads out of it, a path with `..`: runs of such projects
 *     are refused by every operation tried, left out of every listing and
 *     filter, out of serve's /metrics, and no agent task starts on them;
 *   - odd run ids (`..`, `/`, NUL, percent-encodings, unicode) are refused as
 *     not run ids, each answer still JSON;
 *   - text a step made (for_each items, a file name) holding U+2028, U+2029
 *     and a lone surrogate reaches an MCP client shown, never raw;
 *   - cancel of a run this door does not hold is refused, saying so.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, git, IMAGE, projectsForThisFile, runCli, serveFolder, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
let f: Fixture;
/** the --project folder; app is the project the doors serve */
let projects: string;
let app: string;
/** a project beside the folder, whose path starts as the folder's does */
let evil: string;
let pipes: string;
let client: Client;
let stderr = '';
/** runs of evil: by its own path, and through a link inside the folder */
const outside: Record<'prefix' | 'link', string> = { prefix: '', link: '' };

const elsewhere = (projectPath: string) => `version: 1
name: elsewhere
project: { path: ${projectPath}, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: write
    run: echo elsewhere > out.txt
`;

// for_each items and a file name holding a line separator, a paragraph separator and a lone surrogate
const HOSTILE = `version: 1
name: hostile
project: { path: ../projects/app, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: plan
    outputs: [items]
    run: |
      cat >> "$RUNNER_OUTPUT" <<'EOF'
      items=["line\\u2028sep", "para\\u2029sep", "half\\ud800char"]
      EOF
      printf 'x\\n' > "$(printf 'a\\342\\200\\250runner: b.txt')"
  - id: each
    for_each: \${{ steps.plan.outputs.items }}
    run: 'true'
`;

/** Raw in a decoded string: C0 but tab and newline, DEL, C1, bidi, U+2028/2029, any surrogate half (the test's strings hold no whole pair). */
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]/;

type Answer = { isError?: boolean; body: any; text: string };
async function call(name: string, args: Record<string, unknown> = {}): Promise<Answer> {
  const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 180_000 })) as { isError?: boolean; content: Array<{ text: string }> };
  const text = r.content[0]!.text;
  const body = JSON.parse(text); // every answer stays JSON
  return { ...(r.isError ? { isError: true } : {}), body, text };
}
const ok = async (name: string, args: Record<string, unknown> = {}) => {
  const a = await call(name, args);
  assert.ok(!a.isError, `${name} failed: ${a.text}\n${stderr.slice(-3000)}`);
  return a;
};
const strings = (v: unknown, out: string[] = []): string[] => {
  if (typeof v === 'string') out.push(v);
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) (out.push(k), strings(x, out));
  return out;
};

function repo(dir: string): void {
  execFileSync('git', ['init', '-q', '-b', 'main', dir]);
  execFileSync('git', ['-C', dir, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '--allow-empty', '-m', 'initial']);
}

before(async () => {
  f = await fixture();
  projects = path.join(f.root, 'projects');
  app = path.join(projects, 'app');
  evil = path.join(f.root, 'projects-evil', 'app');
  await mkdir(projects);
  repo(app);
  await mkdir(path.dirname(evil));
  repo(evil);
  await symlink(evil, path.join(projects, 'out'));
  pipes = path.join(f.root, 'pipelines');
  await mkdir(pipes);
  await writeFile(path.join(pipes, 'hostile.yaml'), HOSTILE);
  for (const [key, projectPath] of [['prefix', 'projects-evil/app'], ['link', 'projects/out']] as const) {
    const file = path.join(f.root, `elsewhere-${key}.yaml`);
    await writeFile(file, elsewhere(projectPath));
    const r = await runCli(['exec', file, '--json', '--home', f.home]);
    assert.equal(r.code, 0, r.stderr);
    outside[key] = r.json.runId;
  }
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--home', f.home, '--pipelines', pipes, '--project', projects], stderr: 'pipe' });
  transport.stderr?.on('data', (b) => (stderr += b));
  client = new Client({ name: 'door-scope-attacks', version: '1' });
  await client.connect(transport);
});
after(() => client?.close());

test('runner mcp --project DIR: a run of DIR-evil (a prefix) or of a link in DIR leading out is refused; listings and filters leave it out; no agent task starts there', async () => {
  for (const [key, id] of Object.entries(outside)) {
    for (const [tool, args] of [
      ['run_status', {}],
      ['run_diff', { patch: true }],
      ['merge_run', {}],
      ['apply_run', {}],
      ['cancel_run', {}],
    ] as const) {
      const a = await call(tool, { run_id: id, ...args });
      assert.equal(a.body.code, 'outside_scope', `${key} ${tool}: ${a.text}`);
    }
  }
  assert.equal(git(evil, 'status', '--porcelain'), '', 'the checkout outside is clean');
  for (const filter of [{}, { status: 'succeeded' }, { pipeline: 'elsewhere' }, { limit: 1 }]) {
    const runs = (await ok('list_runs', filter)).body.runs as Array<{ runId: string; pipeline: string }>;
    assert.ok(!runs.some((r) => r.pipeline === 'elsewhere'), `list_runs ${JSON.stringify(filter)}: ${JSON.stringify(runs)}`);
  }
  for (const project of ['out', path.join(projects, 'out'), path.join(projects, '..', 'projects-evil', 'app'), `${projects}-evil/app`]) {
    const a = await call('start_agent_task', { project, prompt: 'x' });
    assert.equal(a.body.code, 'outside_folders', `${project}: ${a.text}`);
  }
});

test('odd run ids are refused as not run ids (or unknown), every answer JSON', async () => {
  for (const id of ['..', '.', '../runs/x', `${outside.prefix}/../${outside.prefix}`, 'a/b', '%2e%2e', 'x\u0000y', 'ü', ' ', 'a\u2028b']) {
    for (const tool of ['run_status', 'run_log', 'cancel_run', 'merge_run']) {
      const a = await call(tool, { run_id: id });
      assert.equal(a.isError, true, `${tool} ${JSON.stringify(id)}: ${a.text}`);
      assert.ok(['unsafe_name', 'run_unknown'].includes(a.body.code), `${tool} ${JSON.stringify(id)}: ${a.text}`);
      for (const s of strings(a.body)) assert.doesNotMatch(s, RAW, `${tool}: ${JSON.stringify(s)}`);
    }
  }
});

test('U+2028, U+2029 and a lone surrogate a step made reach the client shown; cancel of a run not held here is refused', async () => {
  const started = (await ok('start_run', { pipeline: 'hostile' })).body;
  const ended = (await ok('wait_for_run', { run_id: started.runId, timeout_seconds: 150 })).body;
  assert.equal(ended.status, 'succeeded', JSON.stringify(ended));
  for (const [tool, args] of [
    ['run_status', {}],
    ['run_diff', {}],
    ['run_diff', { patch: true }],
    ['run_log', {}],
  ] as const) {
    const a = await ok(tool, { run_id: started.runId, ...args });
    for (const s of strings(a.body)) assert.doesNotMatch(s, RAW, `${tool} ${JSON.stringify(args)}: ${JSON.stringify(s)}`);
  }
  const status = (await ok('run_status', { run_id: started.runId })).text;
  assert.match(status, /line\\\\u2028sep/, 'shown, not dropped');
  assert.match(status, /half\\\\ud800char/);
  const files = (await ok('run_diff', { run_id: started.runId })).text;
  assert.match(files, /a\\\\u2028runner: b\.txt/);
  const c = await call('cancel_run', { run_id: started.runId });
  assert.equal(c.body.code, 'not_cancelable', c.text);
  assert.match(c.body.error, /is succeeded, not running or queued on this server/);
});

test('runner serve --project DIR: the same runs refused (403), left out of /api/runs and its filters, and out of /metrics', async () => {
  const s = await serveFolder(f, { 'hostile.yaml': HOSTILE }, '127.0.0.1:0', { args: ['--project', projects] });
  try {
    for (const id of Object.values(outside)) {
      for (const [method, route] of [
        ['GET', ''],
        ['GET', '/diff'],
        ['POST', '/rerun'],
        ['POST', '/cancel'],
        ['POST', '/merge'],
      ] as const) {
        const res = await fetch(`${s.base}/api/runs/${id}${route}`, { method, ...(method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) });
        assert.equal(res.status, 403, `${method} ${route}: ${await res.text()}`);
      }
    }
    for (const q of ['', '?status=succeeded', '?pipeline=elsewhere', '?limit=1']) {
      const runs = (await (await fetch(`${s.base}/api/runs${q}`)).json()) as Array<{ pipeline: string }>;
      assert.ok(!runs.some((r) => r.pipeline === 'elsewhere'), `/api/runs${q}: ${JSON.stringify(runs)}`);
    }
    const metrics = await (await fetch(`${s.base}/metrics`)).text();
    assert.match(metrics, /runner_step_duration_seconds_count\{pipeline="hostile"\}/, metrics);
    assert.doesNotMatch(metrics, /elsewhere/, `/metrics names a pipeline of a project this server does not serve:\n${metrics}`);
    for (const id of ['..', '..%2F..%2Fetc', '%2e%2e', 'a%00b', '%E2%80%A8']) {
      const res = await fetch(`${s.base}/api/runs/${id}`);
      assert.ok([400, 404].includes(res.status), `${id}: ${res.status} ${await res.text()}`);
    }
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
