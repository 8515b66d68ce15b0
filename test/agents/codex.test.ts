/**
 * The real Codex CLI, in runner/codex, run by the runner through the
 * `use: codex` preset against a scripted model speaking the OpenAI Responses
 * API (test/fixtures/model-server.ts): nothing about the CLI is faked.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { commitsOn, execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';
import { ModelServer, type Script } from '../fixtures/model-server.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

const KEY = 'sk-proj-scripted-test-key-000000000000';

async function model(script: Script): Promise<ModelServer> {
  const s = await ModelServer.start(script);
  servers.push(s);
  return s;
}

function pipeline(server: ModelServer, timeout?: string): string {
  return `version: 1
name: agent
project: { path: project, push: never }
secrets: [OPENAI_API_KEY]
agents:
  coder:
    use: codex
    model: gpt-5-codex
    base_url: ${server.url}/v1
steps:
  - id: implement
    agent: coder
    prompt: Write hello.txt that greets the reader, then record that you ran.
${timeout ? `    timeout: ${timeout}\n` : ''}`;
}

const EDITS: Script = {
  turns: [
    { tool: { name: 'exec_command', input: { cmd: "printf 'hello from the agent\\n' > hello.txt" } } },
    { tool: { name: 'exec_command', input: { cmd: 'echo ran > ran.txt' } } },
    { text: 'Wrote hello.txt and ran.txt.' },
  ],
  usage: { input: 1500, output: 40 },
};

async function editsAProject(f: Fixture): Promise<void> {
  const server = await model(EDITS);
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { OPENAI_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'completed');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
  assert.equal(git(f.project, 'show', `${r.json.branch}:ran.txt`), 'ran');
  const [commit] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.equal(commit!.subject, 'step/implement (coder): Wrote hello.txt and ran.txt.');
  assert.equal(step.usage.inputTokens, 3 * 1500);
  assert.equal(step.usage.outputTokens, 3 * 40);
  assert.equal(step.usage.model, 'gpt-5-codex');
  assert.equal(step.usage.costUsd, null, 'Codex reports no cost: null, not a guess');
  assert.match(step.usage.sessionId, /^[0-9a-f-]{36}$/);
  const first = server.agentRequests()[0]!;
  assert.equal(first.path, '/v1/responses');
  assert.ok(JSON.stringify(first.body.input).includes('Write hello.txt that greets the reader'), 'the request holds the prompt');
  assert.doesNotMatch(await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8'), new RegExp(KEY));
}

test('codex edits a project owned by a user: committed, result as subject, usage recorded', { timeout: 120_000 }, async () => {
  await editsAProject(await fixture({ owner: 1000 }));
});

test('codex edits a root-owned project (the step runs as 65532)', { timeout: 120_000 }, async () => {
  await editsAProject(await fixture());
});

test('codex: a model that answers overloaded first is asked again; the step completes', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({ ...EDITS, overloaded: 1 });
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { OPENAI_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.implement.status, 'completed');
  assert.deepEqual(server.agentRequests().map((q) => q.answer).slice(0, 2), ['overloaded', 'turn']);
});

test('codex: a model that never finishes: the step times out and what the agent wrote is committed', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({ ...EDITS, hangAfter: 1 });
  const r = await execPipeline(f, await writePipeline(f, pipeline(server, '20s')), [], { env: { OPENAI_API_KEY: KEY } });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.implement.status, 'timed_out');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
});
