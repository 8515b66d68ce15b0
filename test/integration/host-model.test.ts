/**
 * A model on the user's machine: the real Claude Code, its base_url on
 * 127.0.0.1 (where Ollama, vLLM and llama.cpp listen), reaches the scripted
 * model through its gateway, with no key declared; its calls are counted in
 * tokens and unpriced (never at the price of the hosted model whose name it
 * borrows); the step reaches no other port of the host's loopback, neither
 * through its gateway nor directly. A model that does not answer fails the
 * step at once, naming its address. The same from runner mcp (its agent
 * tasks) and runner serve, which start runs as exec does.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { ModelServer } from '../fixtures/model-server.js';
import { CLI, execPipeline, git, projectsForThisFile, runCli, serveFolder, until, writePipeline } from '../fixtures/project.js';

const WS = '/home/agent/run-workspace';
const fixture = projectsForThisFile();
const servers: Array<{ close(): Promise<void> }> = [];
after(() => Promise.all(servers.map((s) => s.close())));

/** Another service on the host's loopback (a database, a dev server): what the step must never reach. */
async function loopbackService(): Promise<{ port: number; hits: string[]; close(): Promise<void> }> {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    hits.push(`${req.method} ${req.url}`);
    res.end('secret of the host\n');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    port: (server.address() as AddressInfo).port,
    hits,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((r) => server.close(() => r()));
    },
  };
}

const pipeline = (baseUrl: string) => `version: 1
name: host-model
project: { path: project, push: never }
agents:
  coder:
    use: claude-code
    base_url: ${baseUrl}
    max_turns: 10
steps:
  - id: implement
    agent: coder
    prompt: Try the host, then write hello.txt.
`;

test('a model on 127.0.0.1 answers the real Claude Code through its gateway, keyless and unpriced; the host stays closed', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const other = await loopbackService();
  servers.push(other);
  // what a hostile agent would try: the host's other port through its gateway (as a proxy, and as the model's
  // route with the port in Host), and directly (its own loopback, the host's names)
  const probe = [
    `curl -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '' -x http://runner-gateway:3128 http://127.0.0.1:${other.port}/via-proxy > via-proxy.txt 2>&1 || true`,
    `curl -s -m 5 -o /dev/null -w '%{http_code}' --noproxy '' -p -x http://runner-gateway:3128 http://127.0.0.1:${other.port}/via-connect > via-connect.txt 2>&1 || true`,
    `curl -s -m 5 -H 'Host: 127.0.0.1:${other.port}' http://runner-gateway:3128/via-route > via-route.txt 2>&1 || true`,
    `(curl -s -m 5 --noproxy '*' http://127.0.0.1:${other.port}/direct || echo unreachable) > direct.txt 2>&1`,
    `(curl -s -m 5 --noproxy '*' http://host.docker.internal:${other.port}/direct-host || echo unreachable) > direct-host.txt 2>&1`,
  ].join('; ');
  const server = await ModelServer.start(
    {
      turns: [
        { tool: { name: 'Bash', input: { command: probe, description: 'try the host' } } },
        { tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello from a model on this machine\n' } } },
        { text: 'Tried the host, and wrote hello.txt.' },
      ],
      usage: { input: 1000, output: 40 },
    },
    { on: '127.0.0.1' },
  );
  servers.push(server);
  const file = await writePipeline(f, pipeline(server.url));
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'completed', JSON.stringify(step));
  const branch = r.json.branch;
  assert.equal(git(f.project, 'show', `${branch}:hello.txt`), 'hello from a model on this machine');

  // the host's other service saw nothing; the step got refusals and its own loopback
  assert.deepEqual(other.hits, [], 'the step reached another port of the host');
  assert.equal(git(f.project, 'show', `${branch}:via-proxy.txt`), '403');
  assert.match(git(f.project, 'show', `${branch}:via-connect.txt`), /^(403|000)$/);
  assert.doesNotMatch(git(f.project, 'show', `${branch}:via-route.txt`), /secret of the host/);
  assert.equal(git(f.project, 'show', `${branch}:direct.txt`), 'unreachable');
  assert.equal(git(f.project, 'show', `${branch}:direct-host.txt`), 'unreachable');

  // the model was asked for the agent's turns, with no key of ours
  assert.ok(server.agentRequests().length >= 3);
  for (const q of server.requests) assert.doesNotMatch(JSON.stringify(q.headers), /placeholder/);

  // counted in tokens, unpriced: Claude Code asks for a hosted model's name, whose price is not this model's
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const lines = readFileSync(path.join(runDir, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  // the step's try of the model's route with another path was refused there, not passed
  assert.deepEqual(lines.filter((c) => c.refused).map((c) => c.path), ['GET /via-route']);
  const calls = lines.filter((c) => !c.refused);
  assert.equal(calls.length, server.requests.length);
  assert.ok(calls.every((c) => c.costUsd === null), JSON.stringify(calls[0]));
  assert.ok(calls.some((c) => /^claude-/.test(c.model)), 'the calls borrow a hosted model\'s name');
  assert.equal(step.usage.calls, calls.length);
  assert.equal(step.usage.inputTokens, calls.reduce((n: number, c: { inputTokens: number }) => n + c.inputTokens, 0));
  assert.ok(step.usage.inputTokens >= 3000);
  assert.equal(step.usage.costUsd, null);
  assert.equal(step.usage.unpriced, true);
  const shown = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(shown.stdout, /in \/ \d+ out tokens, unpriced/);
  assert.doesNotMatch(shown.stdout, /\$\d/);
});

test('a model the file prices is priced as the file says', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({ turns: [{ text: 'Done.' }], usage: { input: 1_000_000, output: 0 } }, { on: '127.0.0.1' });
  servers.push(server);
  const model = 'claude-sonnet-4-5';
  const file = await writePipeline(f, `${pipeline(server.url).replace('max_turns: 10', `max_turns: 3\n    model: ${model}`)}prices:\n  ${model}: { input: 0.5, output: 1 }\n`);
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const usage = r.json.steps.implement.usage;
  assert.ok(usage.calls >= 1);
  // every call's million input tokens at the file's $0.50, never the hosted model's $3
  assert.equal(usage.costUsd, 0.5 * usage.calls, JSON.stringify(usage));
  assert.equal(usage.unpriced, undefined);
});

test('a model on 127.0.0.1 that does not answer fails the step at once, naming its address', { timeout: 120_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  // a port nothing listens on: taken and given back
  const closed = await loopbackService();
  const port = closed.port;
  await closed.close();
  const file = await writePipeline(f, pipeline(`http://127.0.0.1:${port}`));
  const started = Date.now();
  const r = await execPipeline(f, file);
  const took = Date.now() - started;
  assert.equal(r.code, 1, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'failed');
  assert.match(step.message, new RegExp(`the model at http://127\\.0\\.0\\.1:${port} does not answer \\(connection refused\\)`));
  assert.match(r.stderr, /does not answer \(connection refused\)/);
  assert.doesNotMatch(r.stderr, /usually temporary|retrying/);
  assert.ok(took < 60_000, `said in ${took} ms`);
});

test('the real Codex reaches a model on localhost through its gateway, keyless and unpriced', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(
    {
      turns: [
        { tool: { name: 'exec_command', input: { cmd: "printf 'hello from codex\\n' > hello.txt" } } },
        { text: 'Wrote hello.txt.' },
      ],
      usage: { input: 1500, output: 40 },
    },
    { on: '127.0.0.1' },
  );
  servers.push(server);
  // localhost, not 127.0.0.1: the name means this machine as well
  const file = await writePipeline(f, `version: 1
name: host-model-codex
project: { path: project, push: never }
agents:
  coder:
    use: codex
    model: gpt-5-codex
    base_url: ${server.url.replace('127.0.0.1', 'localhost')}/v1
steps:
  - id: implement
    agent: coder
    prompt: Write hello.txt.
`);
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from codex');
  const usage = r.json.steps.implement.usage;
  assert.ok(usage.calls >= 2, JSON.stringify(usage));
  assert.ok(usage.inputTokens >= 3000, JSON.stringify(usage));
  // gpt-5-codex is in the built-in table: not this model's price
  assert.equal(usage.costUsd, null);
  assert.equal(usage.unpriced, true);
});

test('runner mcp: an agent task on a model on this machine (--agent-base-url on 127.0.0.1) runs without a key', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(
    { turns: [{ tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello over mcp\n' } } }, { text: 'Wrote hello.txt.' }] },
    { on: '127.0.0.1' },
  );
  servers.push(server);
  let stderr = '';
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CLI, 'mcp', '--home', f.home, '--project', f.project, '--agent-base-url', server.url],
    env: { ...(process.env as Record<string, string>), ANTHROPIC_API_KEY: '' },
    stderr: 'pipe',
  });
  transport.stderr?.on('data', (b) => (stderr += b));
  const c = new Client({ name: 'host-model', version: '1' });
  await c.connect(transport);
  const call = async (name: string, args: Record<string, unknown>) => {
    const r = (await c.callTool({ name, arguments: args }, undefined, { timeout: 200_000 })) as { isError?: boolean; content: Array<{ text: string }> };
    assert.ok(!r.isError, `${name}: ${r.content[0]!.text}\n${stderr.slice(-3000)}`);
    return JSON.parse(r.content[0]!.text);
  };
  try {
    const t = await call('start_agent_task', { project: f.project, prompt: 'Write hello.txt.' });
    const end = await call('wait_for_run', { run_id: t.runId, timeout_seconds: 180 });
    assert.equal(end.status, 'succeeded', JSON.stringify(end));
    assert.equal(git(f.project, 'show', `${end.branch ?? `run/${t.runId}`}:hello.txt`), 'hello over mcp');
    assert.ok(server.agentRequests().length >= 2);
  } finally {
    await c.close();
  }
});

test('runner serve: a pipeline whose agent uses a model on this machine runs, its usage unpriced', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(
    { turns: [{ tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello served\n' } } }, { text: 'Wrote hello.txt.' }] },
    { on: '127.0.0.1' },
  );
  servers.push(server);
  const s = await serveFolder(f, { 'local.yaml': pipeline(server.url).replace('path: project', `path: ${f.project}`) }, '127.0.0.1:0');
  try {
    const res = await fetch(`${s.base}/api/pipelines/host-model/runs`, { method: 'POST' });
    assert.equal(res.status, 202, await res.clone().text());
    const { runId } = (await res.json()) as { runId: string };
    const rec = await until('the run to end', async () => {
      const r = (await (await fetch(`${s.base}/api/runs/${runId}`)).json()) as any;
      return ['succeeded', 'failed', 'not_started'].includes(r.status) ? r : undefined;
    }, 180_000);
    assert.equal(rec.status, 'succeeded', JSON.stringify(rec));
    const step = rec.steps.find((x: any) => x.id === 'implement');
    assert.equal(step.usage.costUsd, null);
    assert.equal(step.usage.unpriced, true);
    assert.ok(server.agentRequests().length >= 2);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
