/**
 * The real Codex CLI, in runner/codex, run by the runner through the
 * `use: codex` preset against a scripted model speaking the OpenAI Responses
 * API (test/fixtures/model-server.ts): nothing about the CLI is faked.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { agentCases } from './agent-cases.js';

const KEY = 'sk-proj-scripted-test-key-000000000000';

agentCases({
  preset: 'codex',
  pipeline: (server, timeout) => `version: 1
name: agent
project: { path: project, push: never }
secrets: [OPENAI_API_KEY]
agents:
  coder:
    use: codex
    model: gpt-5-codex
    base_url: ${server.url}
steps:
  - id: implement
    agent: coder
    prompt: Write hello.txt that greets the reader, then record that you ran.
${timeout ? `    timeout: ${timeout}\n` : ''}`,
  edits: {
    turns: [
      { tool: { name: 'exec_command', input: { cmd: "printf 'hello from the agent\\n' > hello.txt" } } },
      { tool: { name: 'exec_command', input: { cmd: 'echo ran > ran.txt' } } },
      { text: 'Wrote hello.txt and ran.txt.' },
    ],
    usage: { input: 1500, output: 40 },
  },
  env: { OPENAI_API_KEY: KEY },
  async check(r, server, f) {
    const usage = r.json.steps.implement.usage;
    // behind its gateway: what the model reported, call by call
    const seen = server.reportedUsage();
    assert.equal(usage.inputTokens, seen.input);
    assert.equal(usage.outputTokens, seen.output);
    assert.equal(usage.calls, seen.calls);
    assert.ok(seen.input >= 3 * 1500 && seen.output >= 3 * 40);
    assert.equal(usage.model, 'gpt-5-codex');
    assert.ok(Math.abs(usage.costUsd - (seen.input * 1.25 + seen.output * 10) / 1e6) < 1e-9, 'Codex reports no cost: the gateway prices its calls from the table');
    assert.match(usage.sessionId, /^[0-9a-f-]{36}$/);
    const first = server.agentRequests()[0]!;
    assert.equal(first.path, '/v1/responses', 'base_url without /v1 reaches the Responses API');
    assert.ok(JSON.stringify(first.body.input).includes('Write hello.txt that greets the reader'), 'the request holds the prompt');
    assert.doesNotMatch(await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8'), new RegExp(KEY));
  },
});
