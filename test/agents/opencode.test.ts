/**
 * The real opencode CLI, in runner/opencode, run by the runner through the
 * `use: opencode` preset against the scripted model (Anthropic Messages API).
 */
import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { commitsOn, execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';
import { ModelServer, type Script } from '../fixtures/model-server.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

const KEY = 'sk-ant-api03-scripted-opencode-key-000000';
const WS = '/home/agent/run-workspace';

async function model(script: Script): Promise<ModelServer> {
  const s = await ModelServer.start(script);
  servers.push(s);
  return s;
}

const pipeline = (server: ModelServer, timeout?: string) => `version: 1
name: agent
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  coder:
    use: opencode
    base_url: ${server.url}
steps:
  - id: implement
    agent: coder
    prompt: Write hello.txt that greets the reader, then record that you ran.
${timeout ? `    timeout: ${timeout}\n` : ''}`;

const EDITS: Script = {
  turns: [
    { tool: { name: 'write', input: { filePath: `${WS}/hello.txt`, content: 'hello from the agent\n' } } },
    { tool: { name: 'bash', input: { command: 'echo ran > ran.txt', description: 'record the run' } } },
    { text: 'Wrote hello.txt and ran.txt.' },
  ],
  usage: { input: 900, output: 25 },
};

async function editsAProject(f: Fixture): Promise<void> {
  const server = await model(EDITS);
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'completed');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
  assert.equal(git(f.project, 'show', `${r.json.branch}:ran.txt`), 'ran');
  const [commit] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.equal(commit!.subject, 'step/implement (coder): Wrote hello.txt and ran.txt.');
  assert.equal(step.usage.inputTokens, 3 * 900);
  assert.equal(step.usage.outputTokens, 3 * 25);
  assert.equal(step.usage.turns, 3);
  assert.ok(step.usage.costUsd > 0);
  assert.match(step.usage.sessionId, /^ses_/);
  assert.ok(JSON.stringify(server.agentRequests()[0]!.body.messages).includes('Write hello.txt that greets the reader'), 'the request holds the prompt');
}

test('opencode edits a project owned by a user: committed, result as subject, usage recorded', { timeout: 120_000 }, async () => {
  await editsAProject(await fixture({ owner: 1000 }));
});

test('opencode edits a root-owned project (the step runs as 65532)', { timeout: 120_000 }, async () => {
  await editsAProject(await fixture());
});

test('opencode: a model that answers overloaded first: the step completes after it asks again', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({ ...EDITS, overloaded: 1 });
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.implement.status, 'completed');
  assert.deepEqual(server.agentRequests().map((q) => q.answer).slice(0, 2), ['overloaded', 'turn']);
});

test('opencode: a model that never finishes: the step times out and what the agent wrote is committed', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await model({ ...EDITS, hangAfter: 1 });
  const r = await execPipeline(f, await writePipeline(f, pipeline(server, '20s')), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.implement.status, 'timed_out');
  assert.equal(git(f.project, 'show', `${r.json.branch}:hello.txt`), 'hello from the agent');
});
