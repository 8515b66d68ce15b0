/**
 * The real Claude Code CLI as the MCP client of `runner mcp`: `claude -p
 * --mcp-config` in a container of runner/claude-code, driven by a scripted
 * model, calls the runner's tools in turn: it starts an agent task on a
 * project (whose own agent step, Claude Code again, is driven by a second
 * scripted model), waits for it, reads its diff and merges it. The runner's
 * dist and node_modules are mounted read-only, the Docker socket so that
 * `runner mcp` (spawned by claude inside the container) can start runs, and
 * the fixture at the same path as on the host (steps mount from the home).
 */
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { ModelServer } from '../fixtures/model-server.js';
import { CLI, git, projectsForThisFile } from '../fixtures/project.js';

const KEY = 'sk-ant-api03-scripted-mcp-claude-0000000000';
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..'); // the runner: dist/test/integration/../../..
const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
const containers: string[] = [];
after(async () => {
  for (const c of containers) execFileSync('docker', ['rm', '-f', c], { stdio: 'ignore' });
  await Promise.all(servers.map((s) => s.close()));
});

/** The run id the latest tool result in the request says (the model reads it there, as a model would). */
function runIdFrom(body: any): string {
  const results = (body.messages as any[]).flatMap((m) => (Array.isArray(m.content) ? m.content : [])).filter((c) => c.type === 'tool_result');
  const text = JSON.stringify(results.at(-1)?.content ?? '');
  const id = /\\"runId\\": \\"([0-9a-z-]+)\\"/.exec(text)?.[1] ?? /"runId": "([0-9a-z-]+)"/.exec(text)?.[1];
  if (!id) throw new Error(`no runId in the last tool result: ${text.slice(0, 500)}`);
  return id;
}

test('Claude Code, through runner mcp, starts an agent task, waits, reads the diff and merges it', { timeout: 240_000 }, async () => {
  const f = await fixture();
  // the agent step inside the run: Claude Code in its own sandbox, behind its gateway
  const inner = await ModelServer.start({
    turns: [{ tool: { name: 'Write', input: { file_path: '/home/agent/run-workspace/hello.txt', content: 'hello from the sandbox\n' } } }, { text: 'Wrote hello.txt.' }],
  });
  servers.push(inner);
  let runId = '';
  const outer = await ModelServer.start({
    turns: [
      { tool: { name: 'mcp__runner__start_agent_task', input: { project: f.project, prompt: 'Write hello.txt that greets the reader.', agent: 'claude-code', verify: 'test -f hello.txt' } } },
      { tool: { name: 'mcp__runner__wait_for_run', input: (body) => ({ run_id: (runId = runIdFrom(body)), timeout_seconds: 150 }) } },
      { tool: { name: 'mcp__runner__run_diff', input: () => ({ run_id: runId }) } },
      { tool: { name: 'mcp__runner__merge_run', input: () => ({ run_id: runId }) } },
      { text: 'The agent wrote hello.txt; I merged it.' },
    ],
  });
  servers.push(outer);
  const secrets = path.join(f.root, 'secrets.env');
  await writeFile(secrets, `ANTHROPIC_API_KEY=${KEY}\n`, { mode: 0o600 });
  const mcpConfig = path.join(f.root, 'mcp.json');
  await writeFile(
    mcpConfig,
    JSON.stringify({ mcpServers: { runner: { command: 'node', args: [CLI, 'mcp', '--home', f.home, '--project', f.project, '--secrets-file', secrets, '--agent-base-url', inner.url] } } }),
  );
  const name = `runner-mcp-claude-${randomBytes(4).toString('hex')}`;
  containers.push(name);
  const nodeModules = execFileSync('realpath', [path.join(ROOT, 'node_modules')], { encoding: 'utf8' }).trim();
  const tools = ['start_agent_task', 'wait_for_run', 'run_diff', 'merge_run'].map((t) => `mcp__runner__${t}`).join(',');
  const args = [
    'run', '--rm', '--name', name,
    '-v', `${ROOT}:${ROOT}:ro`,
    '-v', `${nodeModules}:${nodeModules}:ro`,
    '-v', '/var/run/docker.sock:/var/run/docker.sock',
    '-v', `${f.root}:${f.root}`,
    '-e', `ANTHROPIC_BASE_URL=${outer.url}`,
    '-e', `ANTHROPIC_API_KEY=${KEY}`,
    '-e', 'MCP_TOOL_TIMEOUT=200000',
    '-e', 'CI=true',
    '-w', f.root,
    '--entrypoint', 'claude',
    'runner/claude-code:latest',
    '-p', 'Hand the task in hello.txt to the runner, then merge it.',
    '--mcp-config', mcpConfig, '--strict-mcp-config',
    '--allowedTools', tools,
    '--output-format', 'stream-json', '--verbose', '--max-turns', '10',
  ];
  const r = await new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const c = spawn('docker', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    c.stdout.on('data', (b) => (out += b));
    c.stderr.on('data', (b) => (err += b));
    c.on('close', (code) => resolve({ code, out, err }));
  });
  if (process.env.MCP_DEBUG) {
    console.error(r.err, r.out.slice(0, 6000));
    for (const q of outer.requests) console.error(q.answer, (q.body.tools ?? []).map((t: any) => t.name).join(','), JSON.stringify(q.body.messages ?? []).slice(0, 1500));
  }
  const events = r.out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const result = events.find((e) => e.type === 'result');
  assert.equal(r.code, 0, `claude exited ${r.code}:\n${r.err}\n${r.out.slice(-4000)}`);
  assert.equal(result?.subtype, 'success', r.out.slice(-4000));
  assert.equal(result.result, 'The agent wrote hello.txt; I merged it.');
  // the runner's tools as the CLI exposes them: mcp__runner__<tool>, the server connected. This CLI defers MCP
  // tools (a placeholder in the request's tools, their names told to the model in the request), so the names are
  // checked in its init event and in what it sent the model.
  const init = events.find((e) => e.type === 'system' && e.subtype === 'init');
  assert.deepEqual(init.mcp_servers, [{ name: 'runner', status: 'connected', source: 'dynamic' }]);
  const exposed = (init.tools as string[]).filter((n) => n.startsWith('mcp__runner__')).sort();
  assert.deepEqual(exposed, ['apply_run', 'approve_run', 'cancel_run', 'delivery_preview', 'fork_run', 'list_pipelines', 'list_runs', 'merge_run', 'reject_run', 'resume_run', 'run_diff', 'run_log', 'run_status', 'start_agent_task', 'start_run', 'step_transcript', 'validate_pipeline', 'wait_for_run'].map((t) => `mcp__runner__${t}`));
  const sent = JSON.stringify(outer.agentRequests()[0]!.body);
  for (const t of ['start_agent_task', 'wait_for_run', 'run_diff', 'merge_run']) assert.ok(sent.includes(`mcp__runner__${t}`), `the model is told of mcp__runner__${t}`);
  // each call answered by the runner, not refused by the CLI
  const toolResults = events.filter((e) => e.type === 'user').flatMap((e) => e.message.content).filter((c: any) => c.type === 'tool_result');
  assert.equal(toolResults.length, 4, JSON.stringify(toolResults).slice(0, 3000));
  for (const t of toolResults) assert.notEqual(t.is_error, true, JSON.stringify(t).slice(0, 2000));
  assert.match(JSON.stringify(toolResults[1]), /\\"status\\": \\"succeeded\\"/);
  assert.match(JSON.stringify(toolResults[2]), /hello\.txt/);
  assert.match(JSON.stringify(toolResults[3]), /\\"merged\\": true/);
  // the project ends with the change merged, a real run recorded in the home
  assert.equal(await readFile(path.join(f.project, 'hello.txt'), 'utf8'), 'hello from the sandbox\n');
  assert.match(git(f.project, 'log', '-1', '--format=%s', 'main'), new RegExp(`run/${runId}|${runId}|Merge`));
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
  assert.equal(rec.status, 'succeeded');
  assert.equal(rec.startedBy.via, 'mcp');
  assert.deepEqual(rec.steps.map((s: any) => [s.id, s.status]), [['implement', 'completed'], ['verify', 'completed']]);
  assert.equal(rec.delivered.how, 'merge');
  assert.equal(inner.agentRequests()[0]!.headers['x-api-key'], KEY, "the agent step's key from runner mcp's --secrets-file, through its gateway");
});
