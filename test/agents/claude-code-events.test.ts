/**
 * The real Claude Code CLI (runner/claude-code) against the scripted model,
 * in one shape: the agent runs a command that fails, one in the background
 * that fails after its answer (the test lets it end once the answer is in the transcript) (Claude Code then answers the notification in
 * a wrap-up of its own, "Done."), and one stopped at its timeout. The step's
 * console log, its log file, `runner logs --transcript --json` and MCP's
 * `step_transcript` all say the same events, and the summary is the work's.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { AgentEvent } from '../../src/agents/events.js';
import { renderAgentEvent } from '../../src/agents/render.js';
import { ModelServer, type Script } from '../fixtures/model-server.js';
import { CLI, commitsOn, execPipeline, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const KEY = 'sk-ant-api03-scripted-test-key-0000000000';

const pipeline = (server: ModelServer) => `version: 1
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
    prompt: Run the tests and say what fails.
    timeout: 3m
`;

/** The file in the step's container whose presence ends its background command. */
const RELEASE = '/tmp/release-slow-tests';

/**
 * Once the CLI's answer (its first `result`) is in the run's transcript, the background command is let end,
 * by a file made in the step's container: the end then comes after the answer whatever the machine's load.
 */
async function releaseAfterAnswer(home: string, stop: AbortSignal): Promise<void> {
  while (!stop.aborted) {
    await new Promise((r) => setTimeout(r, 200));
    const runs = await readdir(path.join(home, 'runs')).catch(() => [] as string[]);
    for (const id of runs) {
      const text = await readFile(path.join(home, 'runs', id, 'steps', 'implement.transcript.jsonl'), 'utf8').catch(() => '');
      if (!text.split('\n').some((l) => l.startsWith('{') && (JSON.parse(l) as { type?: string }).type === 'result')) continue;
      const ids = execFileSync('docker', ['ps', '-q', '--filter', `label=dev.runner.home=${home}`, '--filter', 'label=dev.runner.step-id=implement'], { encoding: 'utf8' }).split('\n').filter(Boolean);
      // the step's own container (its gateway carries a role label and has no shell to spare)
      for (const c of ids) {
        const role = execFileSync('docker', ['inspect', '-f', '{{index .Config.Labels "dev.runner.role"}}', c], { encoding: 'utf8' }).trim();
        if (!role) execFileSync('docker', ['exec', c, 'touch', RELEASE]);
      }
      return;
    }
  }
}

const SCRIPT: Script = {
  turns: [
    { tool: { name: 'Write', input: { file_path: '/home/agent/run-workspace/NOTES.md', content: 'subtracts is broken\n' } } },
    { text: 'I will run the tests.', tool: { name: 'Bash', input: { command: "printf 'ok 1 - adds\\nnot ok 2 - subtracts\\n'; exit 1", description: 'run the tests' } } },
    // it ends when the test releases it, once the CLI has given its answer (never a race with the turns' speed)
    { tool: { name: 'Bash', input: { command: `i=0; while [ ! -e ${RELEASE} ] && [ $i -lt 1200 ]; do sleep 0.1; i=$((i+1)); done; echo "not ok 3 - slow"; exit 4`, description: 'run the slow tests', run_in_background: true } } },
    { tool: { name: 'Bash', input: { command: 'sleep 5; echo never', description: 'wait a little', timeout: 1500 } } },
    { text: 'The tests fail: subtracts is broken.' },
    // the wrap-up: Claude Code tells the model the background command ended; the script has nothing more to say
  ],
  usage: { input: 500, output: 20 },
};

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

test('Claude Code in one shape: a failed command with its output, one backgrounded and its end, one timed out; console, log, --transcript --json and MCP agree; the summary is the work\'s', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(SCRIPT);
  servers.push(server);
  const stop = new AbortController();
  const released = releaseAfterAnswer(f.home, stop.signal);
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { ANTHROPIC_API_KEY: KEY } }).finally(() => stop.abort());
  await released;
  assert.equal(r.code, 0, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'completed');
  assert.equal(step.result, 'The tests fail: subtracts is broken.', "the work's answer, not the wrap-up's \"Done.\"");
  assert.equal(server.agentRequests().length, 6, 'five turns of work and one of wrap-up: the script ran out and said "Done."');
  assert.deepEqual(commitsOn(f.project, r.json.branch, r.json.baseSha).map((c) => c.subject), ['step/implement (coder): The tests fail: subtracts is broken.'], 'the commit subject is the work\'s');

  // the events, in our shape, as `runner logs --transcript --json` prints them
  const json = await runCli(['logs', r.json.runId, '--step', 'implement', '--transcript', '--json', '--home', f.home]);
  assert.equal(json.code, 0, json.stderr);
  const events = json.stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l) as AgentEvent);
  const results = events.filter((e): e is Extract<AgentEvent, { kind: 'tool_result' }> => e.kind === 'tool_result' && e.tool === 'shell');
  assert.deepEqual(
    results.map((e) => ({ ok: e.ok, outcome: e.outcome, exitCode: e.exitCode, tail: e.tail })),
    [
      { ok: false, outcome: 'done', exitCode: 1, tail: ['ok 1 - adds', 'not ok 2 - subtracts'] },
      { ok: true, outcome: 'backgrounded', exitCode: undefined, tail: [] },
      { ok: false, outcome: 'timed_out', exitCode: 143, tail: ['Command timed out after 1s'] },
    ],
    JSON.stringify(events, null, 1).slice(0, 6000),
  );
  const task = results[1]?.task;
  assert.match(task ?? '', /^\w+$/, 'the backgrounded command is named by its task');
  assert.deepEqual(
    events.filter((e) => e.kind === 'task_end').map((e) => ({ ...e, text: undefined })),
    [{ agent: 'claude-code', kind: 'task_end', task, id: results[1]!.id, ok: false, exitCode: 4, text: undefined }],
    'its end, with its exit, later',
  );
  assert.deepEqual(events.filter((e) => e.wrapUp).map((e) => e.kind), ['start', 'message', 'final'], 'the wrap-up is marked');
  assert.ok(events.every((e) => e.agent === 'claude-code'));

  // the step's log and the console say exactly what the renderer makes of those events
  const rendered = events.flatMap(renderAgentEvent);
  const log = (await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'implement.log'), 'utf8')).split('\n');
  const agentLines = (lines: string[]) => lines.filter((l) => /^(claude-code: | {2}→ | {4}│ )/.test(l));
  assert.deepEqual(agentLines(log), rendered, log.join('\n'));
  const logs = await runCli(['logs', r.json.runId, '--step', 'implement', '--home', f.home]);
  assert.deepEqual(agentLines(logs.stdout.split('\n')), rendered, 'runner logs');
  const consoleLines = r.stderr.split('\n').filter((l) => l.startsWith('[implement] ')).map((l) => l.slice('[implement] '.length));
  assert.deepEqual(agentLines(consoleLines), rendered, 'the console');
  for (const said of [
    "claude-code: ran: printf 'ok 1 - adds\\nnot ok 2 - subtracts\\n'; exit 1",
    '  → failed, exit 1, 2 lines, 32 B',
    '    │ not ok 2 - subtracts',
    `  → running in the background, task ${task}, its end comes later, 0 lines, 0 B`,
    '  → timed out after 1 s: stopped, exit 143, 1 line, 26 B',
    `claude-code: background task ${task} failed, exit 4: Background command "run the slow tests" failed with exit code 4`,
    'claude-code: (wrap-up) Done.',
  ]) {
    assert.ok(rendered.includes(said), `the log says ${said}:\n${rendered.join('\n')}`);
  }

  // MCP's step_transcript gives the same events
  const transport = new StdioClientTransport({ command: process.execPath, args: [CLI, 'mcp', '--home', f.home, '--project', f.project], stderr: 'pipe' });
  const client = new Client({ name: 'events-test', version: '1' });
  await client.connect(transport);
  try {
    const got: AgentEvent[] = [];
    let from = 0;
    for (;;) {
      const answer = (await client.callTool({ name: 'step_transcript', arguments: { run_id: r.json.runId, step: 'implement', from, max_lines: 7 } })) as { isError?: boolean; content: Array<{ text: string }> };
      assert.ok(!answer.isError, answer.content[0]!.text);
      const body = JSON.parse(answer.content[0]!.text) as { events: AgentEvent[]; nextFrom: number; more: boolean };
      got.push(...body.events);
      from = body.nextFrom;
      if (!body.more) break;
    }
    assert.deepEqual(got, events, 'MCP and runner logs --transcript --json: the same events, page by page');
  } finally {
    await client.close();
  }
});
