/**
 * The real Claude Code CLI, in runner/claude-code, run by the runner through
 * the `use: claude-code` preset against a scripted model (test/fixtures/
 * model-server.ts): nothing about the CLI is faked, only the model's answers.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer, type Script } from '../fixtures/model-server.js';
import { execPipeline, projectsForThisFile, runCli, serveFolder, writePipeline } from '../fixtures/project.js';
import { agentCases } from './agent-cases.js';

const KEY = 'sk-ant-api03-scripted-test-key-0000000000';
const WS = '/home/agent/run-workspace';

const pipeline = (server: ModelServer, timeout?: string) => `version: 1
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
${timeout ? `    timeout: ${timeout}\n` : ''}`;

const EDITS: Script = {
  turns: [
    { tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello from the agent\n' } } },
    { tool: { name: 'Bash', input: { command: 'echo ran > ran.txt', description: 'record the run' } } },
    { text: 'Wrote hello.txt and ran.txt.' },
  ],
  usage: { input: 1200, output: 30 },
};

agentCases({
  preset: 'claude-code',
  pipeline,
  edits: EDITS,
  env: { ANTHROPIC_API_KEY: KEY },
  async check(r, server, f) {
    const step = r.json.steps.implement;
    assert.equal(step.result, 'Wrote hello.txt and ran.txt.');
    assert.equal(step.usage.turns, 3, 'turns as the CLI counts them');
    // behind its gateway: what the model reported, call by call, whatever the CLI says
    const seen = server.reportedUsage();
    assert.equal(step.usage.inputTokens, seen.input);
    assert.equal(step.usage.outputTokens, seen.output);
    assert.equal(step.usage.calls, seen.calls);
    assert.ok(seen.input >= 3 * 1200 && seen.output >= 3 * 30);
    assert.ok(step.usage.costUsd > 0, 'priced from the table');
    assert.match(step.usage.sessionId, /^[0-9a-f-]{36}$/);
    const rec = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
    assert.deepEqual(rec.steps[0].usage, step.usage);
    assert.ok(JSON.stringify(server.agentRequests()[0]!.body.messages).includes('Write hello.txt that greets the reader'), 'the request holds the prompt');
    assert.doesNotMatch(await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8'), new RegExp(KEY));
    assert.match(r.stderr, /\[implement\] claude-code: Wrote hello\.txt and ran\.txt\./);
  },
});

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

test("an agent step's usage in runs show and in /metrics", { timeout: 600_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(EDITS);
  servers.push(server);
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  const seen = server.reportedUsage();
  assert.match(show.stdout, new RegExp(`\\n\\s+claude-\\S+: ${seen.input} in \\/ ${seen.output} out tokens, \\$\\d+\\.\\d{4}, 3 turns, ${seen.calls} calls\\n`));
  assert.match(show.stdout, /\n\s+said: Wrote hello\.txt and ran\.txt\.\n/, 'the agent\'s final message');
  // /metrics counts the runs of the projects the server serves: this one's, by --project (docs/operations.md)
  const s = await serveFolder(f, {}, '127.0.0.1:0', { args: ['--project', f.project] });
  try {
    const metrics = await (await fetch(`${s.base}/metrics`)).text();
    assert.match(metrics, new RegExp(`^runner_agent_tokens_total\\{pipeline="agent",agent="coder",direction="input"\\} ${seen.input}$`, 'm'));
    assert.match(metrics, new RegExp(`^runner_agent_tokens_total\\{pipeline="agent",agent="coder",direction="output"\\} ${seen.output}$`, 'm'));
    assert.match(metrics, /^runner_agent_cost_usd_total\{pipeline="agent",agent="coder"\} 0\.\d+$/m);
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
});
