/**
 * The real Claude Code CLI, in runner/claude-code, run by the runner through
 * the `use: claude-code` preset against a scripted model (test/fixtures/
 * model-server.ts): nothing about the CLI is faked, only the model's answers.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, serveFolder, writePipeline, type Fixture } from '../fixtures/project.js';
import { ModelServer, type Script } from '../fixtures/model-server.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

const KEY = 'sk-ant-api03-scripted-test-key-0000000000';
const WS = '/home/agent/run-workspace';

async function model(script: Script): Promise<ModelServer> {
  const s = await ModelServer.start(script);
  servers.push(s);
  return s;
}

function agentPipeline(server: ModelServer, opts: { timeout?: string } = {}): string {
  return `version: 1
name: agent
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 10
steps:
  - id: implement
    agent: coder
    prompt: Write hello.txt that greets the reader, then record that you ran.
${opts.timeout ? `    timeout: ${opts.timeout}\n` : ''}`;
}

const EDITS: Script = {
  turns: [
    { tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello from the agent\n' } } },
    { tool: { name: 'Bash', input: { command: 'echo ran > ran.txt', description: 'record the run' } } },
    { text: 'Wrote hello.txt and ran.txt.' },
  ],
  usage: { input: 1200, output: 30 },
};

async function editsAProject(f: Fixture): Promise<string> {
  const server = await model(EDITS);
  const file = await writePipeline(f, agentPipeline(server));
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'completed');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
  assert.equal(git(f.project, 'show', `${r.json.branch}:ran.txt`), 'ran');
  const [commit] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.equal(commit!.subject, 'step/implement (coder): Wrote hello.txt and ran.txt.', "the agent's result is the commit subject");
  assert.equal(step.result, 'Wrote hello.txt and ran.txt.');
  // What the CLI reported, recorded.
  assert.equal(step.usage.turns, 3);
  assert.equal(step.usage.inputTokens, 3 * 1200);
  assert.equal(step.usage.outputTokens, 3 * 30);
  assert.ok(step.usage.costUsd > 0, 'a cost, as the CLI computes it');
  assert.match(step.usage.sessionId, /^[0-9a-f-]{36}$/);
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  assert.deepEqual(rec.steps[0].usage, step.usage);
  // The CLI sent the step's prompt, and the key never reached the log.
  const first = server.agentRequests()[0]!;
  assert.ok(JSON.stringify(first.body.messages).includes('Write hello.txt that greets the reader'), 'the request holds the prompt');
  assert.doesNotMatch(await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8'), new RegExp(KEY));
  assert.match(r.stderr, /\[implement\] claude-code: Wrote hello\.txt and ran\.txt\./);
  return r.json.runId;
}

test('claude-code edits a project owned by a user: committed, result as subject, usage recorded and shown', { timeout: 120_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const runId = await editsAProject(f);
  const show = await runCli(['runs', 'show', runId, '--home', f.home]);
  assert.match(show.stdout, /\n\s+claude-\S+: 3600 in \/ 90 out tokens, \$\d+\.\d{4}, 3 turns\n/);
  const s = await serveFolder(f, {}, '127.0.0.1:0');
  try {
    const metrics = await (await fetch(`${s.base}/metrics`)).text();
    assert.match(metrics, /^runner_agent_tokens_total\{pipeline="agent",agent="coder",direction="input"\} 3600$/m);
    assert.match(metrics, /^runner_agent_tokens_total\{pipeline="agent",agent="coder",direction="output"\} 90$/m);
    assert.match(metrics, /^runner_agent_cost_usd_total\{pipeline="agent",agent="coder"\} 0\.\d+$/m);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});

test('claude-code edits a root-owned project (the step runs as 65532)', { timeout: 120_000 }, async () => {
  await editsAProject(await fixture());
});

test('a model that answers overloaded before it answers: the CLI retries, the step completes', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({ ...EDITS, overloaded: 2 });
  const r = await execPipeline(f, await writePipeline(f, agentPipeline(server)), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.implement.status, 'completed');
  assert.deepEqual(server.agentRequests().map((q) => q.answer).slice(0, 3), ['overloaded', 'overloaded', 'turn'], 'what the CLI did: it asked again');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
});

test('a model that never finishes: the step times out and what the agent wrote is committed', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({ ...EDITS, hangAfter: 1 });
  const r = await execPipeline(f, await writePipeline(f, agentPipeline(server, { timeout: '20s' })), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.implement.status, 'timed_out');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent', 'the work before the hang is kept');
  assert.equal(server.agentRequests().at(-1)!.answer, 'hung');
});
