/**
 * `runner mcp` through the SDK's own client, over stdio (spawning the CLI)
 * and over runner serve's /mcp with its token: every tool, every refusal,
 * real runs of a one-step pipeline started, waited for, diffed, merged and
 * applied into a fixture project, a real agent task (Claude Code against a
 * scripted model) with a verify step, and a cancel.
 */
import assert from 'node:assert/strict';
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ModelServer } from '../fixtures/model-server.js';
import { CLI, git, IMAGE, projectsForThisFile, runCli, serveFolder, type Fixture } from '../fixtures/project.js';

const KEY = 'sk-ant-api03-scripted-mcp-key-00000000000';
const fixture = projectsForThisFile();
let f: Fixture;
let pipes: string;
let client: Client;
let stderr = '';

const ONE = `version: 1
name: one
description: writes a word into out.txt
project: { path: ../project, push: never }
inputs:
  word: { description: the word, default: hello }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: write
    run: |
      echo "\${{ inputs.word }}" > out.txt
      printf 'wrote it \\033]0;title\\007\\033[31m red\\n'
`;
const SLOW = `version: 1
name: slow
project: { path: ../project, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: wait
    run: echo started; sleep 120
`;

type Answer = { isError?: boolean; body: any; text: string };
async function call(c: Client, name: string, args: Record<string, unknown> = {}, opts: Parameters<Client['callTool']>[2] = {}): Promise<Answer> {
  const r = (await c.callTool({ name, arguments: args }, undefined, { timeout: 180_000, ...opts })) as { isError?: boolean; content: Array<{ text: string }> };
  const text = r.content[0]!.text;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { ...(r.isError ? { isError: true } : {}), body, text };
}
const ok = async (c: Client, name: string, args: Record<string, unknown> = {}, opts?: Parameters<Client['callTool']>[2]) => {
  const a = await call(c, name, args, opts);
  assert.ok(!a.isError, `${name} failed: ${a.text}\n${stderr.slice(-3000)}`);
  return a.body;
};
const refused = async (c: Client, name: string, args: Record<string, unknown>, code: string | RegExp, says: RegExp) => {
  const a = await call(c, name, args);
  assert.equal(a.isError, true, `${name} ${JSON.stringify(args)} should be refused: ${a.text}`);
  if (a.body) assert.match(a.body.code, typeof code === 'string' ? new RegExp(`^${code}$`) : code);
  assert.match(a.body?.error ?? a.text, says);
  return a;
};

before(async () => {
  f = await fixture();
  pipes = path.join(f.root, 'pipelines');
  await mkdir(pipes);
  await writeFile(path.join(pipes, 'one.yaml'), ONE);
  await writeFile(path.join(pipes, 'slow.yaml'), SLOW);
  await writeFile(path.join(pipes, 'bad.yaml'), 'version: 1\nname: bad\nsteps: []\n');
  await writeFile(path.join(f.root, 'outside.yaml'), ONE.replace('name: one', 'name: outside'));
  await symlink(path.join(f.root, 'outside.yaml'), path.join(pipes, 'link.yaml'));
  await writeFile(path.join(f.root, 'secrets.env'), `ANTHROPIC_API_KEY=${KEY}\n`, { mode: 0o600 });
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', f.home, '--pipelines', pipes, '--project', f.project, '--secrets-file', path.join(f.root, 'secrets.env')],
    env: { ...(process.env as Record<string, string>), ANTHROPIC_API_KEY: '' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b) => (stderr += b));
  client = new Client({ name: 'mcp-test', version: '1' });
  await client.connect(transport);
});
after(() => client?.close());

test('the tools, each with a description and a schema; merge and apply are marked destructive', async () => {
  const { tools } = await client.listTools();
  const names = tools.map((t) => t.name).sort();
  assert.deepEqual(names, ['apply_run', 'approve_run', 'cancel_run', 'delivery_preview', 'fork_run', 'list_pipelines', 'list_runs', 'merge_run', 'reject_run', 'resume_run', 'run_diff', 'run_log', 'run_status', 'start_agent_task', 'start_run', 'step_transcript', 'validate_pipeline', 'wait_for_run']);
  for (const t of tools) {
    assert.ok((t.description ?? '').length > 60, `${t.name} has a description a model can act on`);
    assert.equal(t.inputSchema.type, 'object');
  }
  const by = new Map(tools.map((t) => [t.name, t]));
  for (const n of ['merge_run', 'apply_run']) {
    assert.equal(by.get(n)!.annotations?.destructiveHint, true, n);
    assert.match(by.get(n)!.description!, /CHANGES THE USER'S PROJECT/);
  }
  assert.equal(by.get('run_status')!.annotations?.readOnlyHint, true);
  assert.deepEqual(by.get('start_agent_task')!.inputSchema.required?.sort(), ['project', 'prompt']);
});

test('list_pipelines and validate_pipeline: the folder\'s files with their inputs; a bad one with why; a symlink out is not usable', async () => {
  const { pipelines } = await ok(client, 'list_pipelines');
  const by = new Map(pipelines.map((p: any) => [path.basename(p.file), p]));
  assert.deepEqual((by.get('one.yaml') as any).inputs, { word: { description: 'the word', default: 'hello' } });
  assert.equal((by.get('one.yaml') as any).name, 'one');
  assert.equal((by.get('bad.yaml') as any).name, null);
  assert.match((by.get('bad.yaml') as any).errors.join('\n'), /at least one step/);
  assert.equal((by.get('outside.yaml') as any).name, null, 'the symlink is listed by its real path, unusable');
  assert.match((by.get('outside.yaml') as any).errors.join('\n'), /outside the pipelines folders/);
  assert.equal((await ok(client, 'validate_pipeline', { file: 'one.yaml' })).valid, true);
  const bad = await ok(client, 'validate_pipeline', { file: path.join(pipes, 'bad.yaml') });
  assert.equal(bad.valid, false);
  assert.match(bad.errors.join('\n'), /at least one step/);
  await refused(client, 'validate_pipeline', { file: '../outside.yaml' }, 'outside_folders', /is not under .*pipelines: this server takes only pipeline files under its --pipelines folder/);
});

test('refusals: pipelines and projects outside the folders, ../, symlinks, bad run ids, bad arguments, unknown inputs', async () => {
  for (const pipeline of [path.join(f.root, 'outside.yaml'), '../outside.yaml', 'link.yaml', '/etc/passwd']) {
    await refused(client, 'start_run', { pipeline }, 'outside_folders', /not under/);
  }
  await refused(client, 'start_run', { pipeline: 'nope' }, 'not_found', /no pipeline file at .*nope/);
  await refused(client, 'start_run', { pipeline: 'one', inputs: { colour: 'red' } }, 'bad_input', /colour/);
  for (const project of ['/tmp', '../', f.root, path.join(f.project, '..', 'pipelines')]) {
    await refused(client, 'start_agent_task', { project, prompt: 'x' }, 'outside_folders', /not under .*project: this server takes only projects under its --project folder/);
  }
  for (const id of ['../x', '..', 'a/../../b']) await refused(client, 'run_status', { run_id: id }, 'unsafe_name', /is not a run id|cannot be used as a name/);
  await refused(client, 'run_status', { run_id: '20200101-000000-aaaaaa' }, 'run_unknown', /no run 20200101-000000-aaaaaa.*\nWhat to do: list_runs/);
  await refused(client, 'merge_run', { run_id: '../../etc' }, 'unsafe_name', /not a run id/);
  await refused(client, 'run_diff', { run_id: '20200101-000000-aaaaaa' }, 'run_unknown', /no run/);
  // bad arguments: a tool error that names what is wrong, never a crash
  const wrongType = await call(client, 'start_run', { pipeline: 42 });
  assert.equal(wrongType.isError, true);
  assert.match(wrongType.text, /pipeline/);
  assert.match(wrongType.text, /expected string/);
  const missing = await call(client, 'run_status', {});
  assert.equal(missing.isError, true);
  assert.match(missing.text, /run_id/);
  const badEnum = await call(client, 'start_agent_task', { project: f.project, prompt: 'x', agent: 'gpt-pilot' });
  assert.equal(badEnum.isError, true);
  assert.match(badEnum.text, /claude-code/);
  const badCursor = await call(client, 'run_log', { run_id: '20200101-000000-aaaaaa', cursor: 'x' });
  assert.equal(badCursor.isError, true);
  // the server still answers
  assert.ok((await ok(client, 'list_runs')).runs);
});

test('a run started over MCP: waited for, its log shown safe, its diff read, merged into the project; another applied', async () => {
  const started = await ok(client, 'start_run', { pipeline: 'one', inputs: { word: 'merged' } });
  assert.match(started.runId, /^\d{8}-\d{6}-[a-z0-9]{6}$/);
  const done = await ok(client, 'wait_for_run', { run_id: started.runId, timeout_seconds: 120 });
  assert.equal(done.ended, true, JSON.stringify(done));
  assert.equal(done.status, 'succeeded');
  assert.equal(done.steps.write.status, 'completed');
  // a real run, recorded in the home: the CLI follows it
  const show = await runCli(['runs', 'show', started.runId, '--home', f.home]);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, /status {5}succeeded/);
  assert.match(show.stdout, /started by mcp/);
  const log = await ok(client, 'run_log', { run_id: started.runId });
  assert.deepEqual(log.lines, ['[write] wrote it \\x1b]0;title\\x07\\x1b[31m red']);
  assert.doesNotMatch(JSON.stringify(log), /\u001b/);
  const again = await ok(client, 'run_log', { run_id: started.runId, cursor: log.cursor });
  assert.deepEqual(again.lines, [], 'nothing written since the cursor');
  await refused(client, 'step_transcript', { run_id: started.runId, step: 'write' }, 'no_log', /only an agent preset's steps have one/);
  const files = await ok(client, 'run_diff', { run_id: started.runId });
  assert.deepEqual(files.files.map((x: any) => [x.path, x.status, x.added]), [['out.txt', 'added', 1]]);
  const one = await ok(client, 'run_diff', { run_id: started.runId, file: 'out.txt' });
  assert.match(one.patch, /\+merged\n/);
  const whole = await ok(client, 'run_diff', { run_id: started.runId, patch: true, max_bytes: 1000 });
  assert.match(whole.patch, /^diff --git a\/out.txt b\/out.txt/);
  await refused(client, 'run_diff', { run_id: started.runId, file: 'other.txt' }, 'no_diff', /has no file other\.txt/);
  const preview = await ok(client, 'delivery_preview', { run_id: started.runId });
  assert.equal(preview.deliverable, true, JSON.stringify(preview));
  await refused(client, 'merge_run', { run_id: started.runId, into: '-bad..name' }, 'bad_request', /"into" must be a branch name/);
  const merged = await ok(client, 'merge_run', { run_id: started.runId });
  assert.equal(merged.merged, true);
  assert.equal(merged.into, 'main');
  assert.equal(await readFile(path.join(f.project, 'out.txt'), 'utf8'), 'merged\n', 'the checkout moved with main');
  assert.equal(git(f.project, 'log', '-1', '--format=%H', 'main'), merged.commit);
  const twice = await call(client, 'merge_run', { run_id: started.runId });
  assert.equal(twice.isError, true, `a merged run is not merged twice: ${twice.text}`);

  const second = await ok(client, 'start_run', { pipeline: path.join(pipes, 'one.yaml'), inputs: { word: 'applied' } });
  assert.equal((await ok(client, 'wait_for_run', { run_id: second.runId, timeout_seconds: 120 })).status, 'succeeded');
  const applied = await ok(client, 'apply_run', { run_id: second.runId });
  assert.deepEqual(applied.files, ['out.txt']);
  assert.equal(await readFile(path.join(f.project, 'out.txt'), 'utf8'), 'applied\n');
  assert.match(git(f.project, 'status', '--porcelain'), /^M out\.txt$/m, 'uncommitted (git() trims the leading space)');
  git(f.project, 'checkout', '--', 'out.txt');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', second.runId, 'run.json'), 'utf8'));
  assert.deepEqual(rec.deliveries.map((d: any) => [d.action, d.ok, d.by.via]), [['apply', true, 'mcp']]);
});

test('a run still running: merge and apply refused; canceled, it ends canceled; a second cancel is refused', async () => {
  const s = await ok(client, 'start_run', { pipeline: 'slow' });
  const progress: Array<{ progress: number; total?: number; message?: string }> = [];
  const early = await ok(client, 'wait_for_run', { run_id: s.runId, timeout_seconds: 7 }, { onprogress: (p) => void progress.push(p) });
  assert.equal(early.ended, false, 'the wait ends at its bound');
  assert.equal(early.status, 'running');
  assert.ok(progress.length >= 1, 'a progress notification while it waited');
  assert.equal(progress[0]!.total, 7);
  assert.match(progress[0]!.message!, /^running: step wait/);
  await refused(client, 'merge_run', { run_id: s.runId }, /not_deliverable/, /refused \(not_deliverable\)/);
  await refused(client, 'apply_run', { run_id: s.runId }, /not_deliverable/, /refused/);
  assert.equal((await ok(client, 'cancel_run', { run_id: s.runId })).canceling, true);
  const end = await ok(client, 'wait_for_run', { run_id: s.runId, timeout_seconds: 120 });
  assert.equal(end.status, 'canceled');
  await refused(client, 'cancel_run', { run_id: s.runId }, 'not_cancelable', /is canceled, not running or queued on this server/);
  const listed = await ok(client, 'list_runs', { status: 'canceled' });
  assert.deepEqual(listed.runs.map((r: any) => r.runId), [s.runId]);
});

test('an agent task: Claude Code on the project behind its gateway, a verify step, diffed and merged', async () => {
  const model = await ModelServer.start({
    turns: [
      { tool: { name: 'Write', input: { file_path: '/home/agent/run-workspace/hello.txt', content: 'hello from the agent\n' } } },
      { text: 'Wrote hello.txt.' },
    ],
  });
  // The agent's model API is the scripted server: a server setting (--agent-base-url), never a tool argument.
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', f.home, '--project', f.project, '--secrets-file', path.join(f.root, 'secrets.env'), '--agent-base-url', model.url],
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b) => (stderr += b));
  const c = new Client({ name: 'mcp-test-agent', version: '1' });
  await c.connect(transport);
  try {
    const t = await ok(c, 'start_agent_task', { project: f.project, prompt: 'Write hello.txt that greets the reader.', verify: 'test -f hello.txt && grep -q agent hello.txt' });
    assert.match(t.pipelineFile, new RegExp(`^${f.home}/mcp-tasks/task-[0-9a-f]{8}\\.yaml$`));
    const end = await ok(c, 'wait_for_run', { run_id: t.runId, timeout_seconds: 150 }, { timeout: 180_000 });
    assert.equal(end.status, 'succeeded', JSON.stringify(end));
    assert.equal(end.steps.implement.result, 'Wrote hello.txt.');
    assert.equal(end.steps.verify.status, 'completed');
    assert.ok(JSON.stringify(model.agentRequests()[0]!.body.messages).includes('Write hello.txt that greets the reader.'), 'the prompt reached the agent as the input');
    assert.equal(model.agentRequests()[0]!.headers['x-api-key'], KEY, 'the key came from --secrets-file, through the gateway');
    const tr = await ok(c, 'step_transcript', { run_id: t.runId, step: 'implement', max_lines: 200 });
    assert.ok(tr.events.some((e: any) => e.kind === 'tool_call' && JSON.stringify(e.input).includes('hello.txt')), 'the transcript has the tool call, in the one shape');
    assert.deepEqual((await ok(c, 'run_diff', { run_id: t.runId })).files.map((x: any) => x.path), ['hello.txt']);
    const m = await ok(c, 'merge_run', { run_id: t.runId });
    assert.equal(m.merged, true);
    assert.equal(await readFile(path.join(f.project, 'hello.txt'), 'utf8'), 'hello from the agent\n');
  } finally {
    await c.close();
    await model.close();
  }
});

test("the same tools at runner serve's /mcp, behind its token; refused without it", async () => {
  const token = 'mcp-test-token-0123456789';
  const s = await serveFolder(f, { 'one.yaml': ONE }, '127.0.0.1:0', { env: { RUNNER_TOKEN: token }, args: ['--project', f.project] });
  try {
    const anon = new Client({ name: 'anon', version: '1' });
    await assert.rejects(anon.connect(new StreamableHTTPClientTransport(new URL(`${s.base}/mcp`))), /401|token is required/);
    const wrong = new Client({ name: 'wrong', version: '1' });
    await assert.rejects(wrong.connect(new StreamableHTTPClientTransport(new URL(`${s.base}/mcp`), { requestInit: { headers: { authorization: 'Bearer nope' } } })), /401|token is required/);
    const c = new Client({ name: 'http', version: '1' });
    await c.connect(new StreamableHTTPClientTransport(new URL(`${s.base}/mcp`), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
    try {
      assert.equal((await c.listTools()).tools.length, 18);
      const { pipelines } = await ok(c, 'list_pipelines');
      assert.deepEqual(pipelines.map((p: any) => p.name).filter(Boolean).sort(), ['one', 'slow'], 'the server\'s own folder');
      await refused(c, 'start_run', { pipeline: path.join(f.root, 'outside.yaml') }, 'outside_folders', /not under/);
      await refused(c, 'start_run', { pipeline: 'link.yaml' }, 'outside_folders', /not under/);
      await refused(c, 'start_agent_task', { project: '/tmp', prompt: 'x' }, 'outside_folders', /not under/);
      const r = await ok(c, 'start_run', { pipeline: 'one', inputs: { word: 'served' } });
      const end = await ok(c, 'wait_for_run', { run_id: r.runId, timeout_seconds: 120 });
      assert.equal(end.status, 'succeeded');
      const listed: any = await (await fetch(`${s.base}/api/runs/${r.runId}`, { headers: { authorization: `Bearer ${token}` } })).json();
      assert.equal(listed.startedBy.via, 'mcp', 'the API sees the run MCP started');
      assert.deepEqual((await ok(c, 'run_diff', { run_id: r.runId })).files.map((x: any) => x.path), ['out.txt']);
      const m = await ok(c, 'merge_run', { run_id: r.runId });
      assert.equal(m.merged, true);
      assert.equal(await readFile(path.join(f.project, 'out.txt'), 'utf8'), 'served\n');
      // an agent task through serve: it is queued and recorded like the folder's pipelines (here it cannot start: no key)
      const t = await ok(c, 'start_agent_task', { project: f.project, prompt: 'x' });
      const tEnd = await ok(c, 'wait_for_run', { run_id: t.runId, timeout_seconds: 60 });
      assert.equal(tEnd.status, 'not_started');
      assert.match(tEnd.error.message, /ANTHROPIC_API_KEY/);
    } finally {
      await c.close();
    }
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
