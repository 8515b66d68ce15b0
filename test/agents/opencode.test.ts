/**
 * The real opencode CLI, in runner/opencode, run by the runner through the
 * `use: opencode` preset against the scripted model (Anthropic Messages API).
 */
import assert from 'node:assert/strict';
import { agentCases } from './agent-cases.js';

agentCases({
  preset: 'opencode',
  pipeline: (server, timeout) => `version: 1
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
${timeout ? `    timeout: ${timeout}\n` : ''}`,
  edits: {
    turns: [
      { tool: { name: 'write', input: { filePath: '/home/agent/run-workspace/hello.txt', content: 'hello from the agent\n' } } },
      { tool: { name: 'bash', input: { command: 'echo ran > ran.txt', description: 'record the run' } } },
      { text: 'Wrote hello.txt and ran.txt.' },
    ],
    usage: { input: 900, output: 25 },
  },
  env: { ANTHROPIC_API_KEY: 'sk-ant-api03-scripted-opencode-key-000000' },
  check(r, server) {
    const usage = r.json.steps.implement.usage;
    // behind its gateway: what the model reported, call by call
    const seen = server.reportedUsage();
    assert.equal(usage.inputTokens, seen.input);
    assert.equal(usage.outputTokens, seen.output);
    assert.equal(usage.calls, seen.calls);
    assert.ok(seen.input >= 3 * 900 && seen.output >= 3 * 25);
    assert.equal(usage.turns, 3);
    assert.ok(usage.costUsd > 0);
    assert.match(usage.sessionId, /^ses_/);
    assert.ok(JSON.stringify(server.agentRequests()[0]!.body.messages).includes('Write hello.txt that greets the reader'), 'the request holds the prompt');
  },
});
