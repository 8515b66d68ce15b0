/**
 * Approval gates through MCP with the SDK's own client (runner mcp over
 * stdio), for real: start_run of a gated pipeline, wait_for_run answers at
 * the gate, approve_run makes it go on in the MCP server with its comment,
 * reject_run ends another; deciding twice, a comment over the bound, and a
 * run outside the server's projects are refused, each answer still JSON.
 */
import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CLI, git, projectsForThisFile, runCli, writePipeline, type Fixture } from '../fixtures/project.js';
import { assertHoldsNothing, GATED, record } from '../fixtures/gates.js';

const fixture = projectsForThisFile();
let f: Fixture;
let client: Client;
let stderr = '';

type Answer = { isError?: boolean; body: any; text: string };
async function call(name: string, args: Record<string, unknown> = {}): Promise<Answer> {
  const r = (await client.callTool({ name, arguments: args }, undefined, { timeout: 180_000 })) as { isError?: boolean; content: Array<{ text: string }> };
  const text = r.content[0]!.text;
  let body: any;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { ...(r.isError ? { isError: true } : {}), body, text };
}
const ok = async (name: string, args: Record<string, unknown> = {}) => {
  const a = await call(name, args);
  assert.ok(!a.isError, `${name} failed: ${a.text}\n${stderr.slice(-3000)}`);
  return a.body;
};

/** Starts the gated pipeline; resolves once wait_for_run answers at its gate and its cleanup is done. */
async function startAtGate(): Promise<string> {
  const { runId } = await ok('start_run', { pipeline: 'gated' });
  const t0 = Date.now();
  const w = await ok('wait_for_run', { run_id: runId, timeout_seconds: 120 });
  assert.equal(w.status, 'awaiting_approval', JSON.stringify(w));
  assert.equal(w.ended, false);
  assert.ok(Date.now() - t0 < 60_000, 'wait_for_run answers at the gate, not at its timeout');
  assert.equal(w.gate.prompt, "Read PLAN.md on the run's branch; approve to implement it.");
  for (let i = 0; i < 100 && (await record(f.home, runId)).cleanup !== null; i++) await new Promise((r) => setTimeout(r, 100));
  return runId;
}

before(async () => {
  f = await fixture();
  const pipes = path.join(f.root, 'pipelines');
  await mkdir(pipes);
  await writeFile(path.join(pipes, 'gated.yaml'), GATED('../project'));
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--home', f.home, '--pipelines', pipes], stderr: 'pipe' });
  transport.stderr?.on('data', (b) => (stderr += b));
  client = new Client({ name: 'gates-mcp', version: '1' });
  await client.connect(transport);
});
after(() => client?.close());

test('approve_run and reject_run are tools, each saying it is a person\'s decision', async () => {
  const { tools } = await client.listTools();
  for (const name of ['approve_run', 'reject_run']) {
    const t = tools.find((x) => x.name === name);
    assert.ok(t, name);
    assert.match(t.description ?? '', /A PERSON'S DECISION/);
    assert.deepEqual(Object.keys((t.inputSchema as { properties: object }).properties).sort(), ['comment', 'run_id']);
  }
  assert.doesNotMatch(tools.find((x) => x.name === 'approve_run')!.description!, /show_run|get_diff/, 'it names only tools that exist');
});

test('start_run waits at the gate holding nothing; approve_run with a comment: it goes on here to its end, the comment in the next step; again is refused', { timeout: 180_000 }, async () => {
  const runId = await startAtGate();
  assertHoldsNothing(f, runId);
  const a = await ok('approve_run', { run_id: runId, comment: 'approved over MCP \u001b[31m' });
  assert.deepEqual([a.decision, a.goesOn, a.step], ['approved', 'here', 'approve']);
  const done = await ok('wait_for_run', { run_id: runId, timeout_seconds: 120 });
  assert.deepEqual([done.ended, done.status], [true, 'succeeded']);
  assert.equal(git(f.project, 'show', `run/${runId}:comment-env.txt`), 'approved over MCP \u001b[31m');
  const rec = await record(f.home, runId);
  assert.equal(rec.decisions[0].by.via, 'mcp');

  for (const tool of ['approve_run', 'reject_run']) {
    const again = await call(tool, { run_id: runId });
    assert.equal(again.isError, true, again.text);
    assert.equal(again.body.code, 'not_waiting');
  }
});

test('reject_run ends the run rejected, its work kept; wait_for_run says it ended', { timeout: 180_000 }, async () => {
  const runId = await startAtGate();
  const r = await ok('reject_run', { run_id: runId, comment: 'not now' });
  assert.deepEqual([r.decision, r.status, r.goesOn], ['rejected', 'rejected', null]);
  const w = await ok('wait_for_run', { run_id: runId, timeout_seconds: 60 });
  assert.deepEqual([w.ended, w.status], [true, 'rejected'], 'a rejected run has ended');
  assert.equal(git(f.project, 'show', `run/${runId}:PLAN.md`), 'the plan');
  const twice = await call('approve_run', { run_id: runId });
  assert.equal(twice.isError, true);
  assert.match(twice.body.error, /is rejected, not waiting at a gate/);
});

test('refused: a comment over 8000 characters, a run of a project this server does not serve, an id that is a path', { timeout: 180_000 }, async () => {
  const runId = await startAtGate();
  const long = await call('approve_run', { run_id: runId, comment: 'x'.repeat(8001) });
  assert.equal(long.isError, true, long.text);
  assert.deepEqual([(await record(f.home, runId)).status, (await record(f.home, runId)).decisions], ['awaiting_approval', undefined]);

  const elsewhere = await fixture();
  const o = await runCli(['exec', await writePipeline(elsewhere, GATED(elsewhere.project)), '--json', '--no-wait-at-gate', '--home', f.home]);
  assert.equal(o.code, 0, o.stderr);
  for (const tool of ['approve_run', 'reject_run']) {
    const r = await call(tool, { run_id: o.json.runId, comment: 'not yours' });
    assert.equal(r.isError, true, r.text);
    assert.equal(r.body.code, 'outside_scope');
  }
  assert.equal((await record(f.home, o.json.runId)).status, 'awaiting_approval');
  const bad = await call('approve_run', { run_id: '../../etc' });
  assert.equal(bad.isError, true);
  await ok('reject_run', { run_id: runId });
});
