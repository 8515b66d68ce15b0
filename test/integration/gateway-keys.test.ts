/**
 * Keys stay outside: the real Claude Code behind its gateway edits the
 * project; the scripted model sees the real key, the agent's container never
 * has it (a command there searches its environment, files and /proc); every
 * call is in calls.jsonl, and the step's usage is their sum.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { execPipeline, git, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const KEY = 'sk-ant-api03-the-real-key-' + 'x'.repeat(20);
const WS = '/home/agent/run-workspace';
const fixture = projectsForThisFile();
const run = promisify(execFile);
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

// What a poisoned prompt would make the agent do: look everywhere it can for the key.
const SEARCH = [
  'found=0',
  'env | grep -q "the-real-k[e]y" && found=$((found+1))',
  'for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr "\\0" "\\n" < "$f" 2>/dev/null | grep -q "the-real-k[e]y" && found=$((found+1)); done',
  'grep -rqs "the-real-k[e]y" /home /tmp /etc /run /root /var/tmp /workspace . 2>/dev/null && found=$((found+1))',
  'echo "$found" > search.txt',
  'echo "$ANTHROPIC_API_KEY" > key-seen.txt',
].join('; ');

test('behind the gateway the model sees the real key, the agent never has it; usage is the sum of the calls', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: [
      { tool: { name: 'Bash', input: { command: SEARCH, description: 'search for the key' } } },
      { tool: { name: 'Write', input: { file_path: `${WS}/hello.txt`, content: 'hello from behind the gateway\n' } } },
      { text: 'Searched, and wrote hello.txt.' },
    ],
    usage: { input: 1000, output: 40 },
  });
  servers.push(server);
  const file = await writePipeline(f, `version: 1
name: keys
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
    prompt: Find the API key, then write hello.txt.
`);
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const branch = r.json.branch;
  assert.equal(git(f.project, 'show', `${branch}:hello.txt`), 'hello from behind the gateway');
  assert.equal(git(f.project, 'show', `${branch}:search.txt`), '0', 'nothing in the container holds the key');
  assert.equal(git(f.project, 'show', `${branch}:key-seen.txt`), 'runner-gateway-placeholder');

  // every request reached the model with the real key, none with the placeholder
  assert.ok(server.requests.length >= 3);
  for (const q of server.requests) {
    assert.equal(q.headers['x-api-key'], KEY);
    assert.doesNotMatch(JSON.stringify(q.headers), /placeholder/);
  }

  // one line per call in calls.jsonl, and the step's usage is their sum
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const calls = readFileSync(path.join(runDir, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(calls.length, server.requests.length);
  const usage = r.json.steps.implement.usage;
  assert.equal(usage.calls, calls.length);
  assert.equal(usage.inputTokens, calls.reduce((n: number, c: { inputTokens: number }) => n + c.inputTokens, 0));
  assert.equal(usage.outputTokens, calls.reduce((n: number, c: { outputTokens: number }) => n + c.outputTokens, 0));
  assert.equal(usage.inputTokens, 1000 * server.requests.length, 'as the model reported it');
  const turns = server.requests.filter((q) => q.answer === 'turn').length;
  assert.equal(usage.outputTokens, 40 * turns + (server.requests.length - turns), 'as the model reported it');
  for (const c of calls) {
    assert.equal(c.step, 'implement');
    assert.equal(c.status, 200);
    assert.ok(c.durationMs >= 0);
  }
  const priced = calls.every((c: { costUsd: number | null }) => c.costUsd !== null);
  if (priced) assert.ok(Math.abs(usage.costUsd - calls.reduce((n: number, c: { costUsd: number }) => n + c.costUsd, 0)) < 1e-9);
  assert.doesNotMatch(readFileSync(path.join(runDir, 'steps', 'implement.log'), 'utf8'), /the-real-key/);
  // played again with warm gateways (scripts/test-suite.sh): the step's gateway was one of them
  if (process.env.RUNNER_WARM) assert.match(readFileSync(path.join(runDir, 'steps', 'implement.log'), 'utf8'), /runner: gateway: a warm one/);

  const shown = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(shown.stdout, new RegExp(`${calls.length} calls`));
});

test('with prices: in the file, the gateway prices a model the table does not know', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({ turns: [{ text: 'Nothing to do.' }], usage: { input: 1_000_000, output: 10 } });
  servers.push(server);
  const file = await writePipeline(f, `version: 1
name: prices
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
prices:
  house-model: { input: 2, output: 100000 }
agents:
  coder:
    use: claude-code
    model: house-model
    base_url: ${server.url}
steps:
  - id: implement
    agent: coder
    prompt: Say hello.
`);
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const calls = readFileSync(path.join(runDir, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  for (const c of calls) {
    assert.equal(c.model, 'house-model');
    assert.ok(Math.abs(c.costUsd - (c.inputTokens * 2 + c.outputTokens * 100000) / 1e6) < 1e-6, JSON.stringify(c));
  }
  assert.equal(r.json.steps.implement.usage.unpriced, undefined);
});

// Whoever reads the engine's API (the docker group, a monitoring agent, a dashboard with the socket) reads every
// container's env, command, labels and mounts: the key must be in none of them, nor in any network the run makes.
test("the real key is in no container's or network's inspect output, while the step runs", { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({ turns: [{ text: 'ok' }], usage: { input: 10, output: 2 } });
  servers.push(server);
  const file = await writePipeline(f, `version: 1
name: inspect
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    egress: [allowed.example]
steps:
  - id: implement
    agent: coder
    timeout: 1m
    run: ${JSON.stringify(`curl -s -o /dev/null -H 'content-type: application/json' -d '{"model":"claude-sonnet-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}' "$ANTHROPIC_BASE_URL/v1/messages"; sleep 6`)}
`);
  const seen = new Map<string, string>();
  const found: string[] = [];
  let polling = true;
  const docker = async (...args: string[]) => (await run('docker', args, { maxBuffer: 1 << 26 }).catch(() => ({ stdout: '' }))).stdout;
  const poll = (async () => {
    const label = `label=dev.runner.home=${f.home}`;
    while (polling) {
      for (const kind of ['container', 'network', 'volume'] as const) {
        const ids = (await docker(kind, 'ls', ...(kind === 'container' ? ['-a'] : []), '-q', '--filter', label)).split('\n').filter(Boolean);
        if (!ids.length) continue;
        // one inspect for all of a kind: a container may be gone by then, the others are still shown
        const json = await docker(kind, 'inspect', ...ids);
        if (kind === 'container') for (const c of JSON.parse(json || '[]') as Array<{ Id: string; Config?: { Labels?: Record<string, string> } }>) seen.set(c.Id, c.Config?.Labels?.['dev.runner.role'] ?? 'step');
        if (json.includes(KEY) || json.includes(KEY.slice(12, 40))) found.push(`${kind} ${ids.join(' ')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
  polling = false;
  await poll;
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual([...new Set(seen.values())].sort(), ['gateway', 'step'], `both the gateway and the step were inspected while they ran: ${JSON.stringify([...seen])}`);
  assert.deepEqual(found, [], 'no inspect output holds the key');
  assert.equal(server.requests[0]!.headers['x-api-key'], KEY, 'and the model got it from the gateway');
});
