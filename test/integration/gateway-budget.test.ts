/**
 * Budgets enforced live: an agent with a budget of a few thousand tokens is
 * refused its next model call once they are spent; the step ends
 * budget_exhausted with its work committed and the figures in its record.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));

test('a token budget stops the agent at its next call: budget_exhausted, work committed', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: Array.from({ length: 8 }, (_, i) => ({ tool: { name: 'Bash', input: { command: `echo ${i} > step-${i}.txt`, description: `file ${i}` } } })),
    usage: { input: 1000, output: 40 },
  });
  servers.push(server);
  const file = await writePipeline(f, `version: 1
name: budget
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 20
    budget: { tokens: 2500 }
steps:
  - id: implement
    agent: coder
    prompt: Write eight files.
  - id: after
    image: runner/base:latest
    run: echo never
`);
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: 'sk-ant-api03-budget-test-key-000000000' } });
  assert.equal(r.code, 1, r.stderr);
  const step = r.json.steps.implement;
  assert.equal(step.status, 'budget_exhausted', JSON.stringify(step));
  assert.match(step.message, /budget exhausted/);
  assert.equal(r.json.steps.after.status, 'skipped');

  const runDir = path.join(f.home, 'runs', r.json.runId);
  const calls = readFileSync(path.join(runDir, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  const refused = calls.filter((c) => c.refused === 'budget');
  assert.ok(refused.length >= 1, 'a call was refused');
  const before = calls.slice(0, calls.indexOf(refused[0]));
  const spent = before.reduce((n, c) => n + c.inputTokens + c.outputTokens + c.cacheReadTokens + c.cacheWriteTokens, 0);
  assert.ok(spent >= 2500, `refused only once the budget was spent (${spent})`);
  assert.ok(spent - (before.at(-1).inputTokens + before.at(-1).outputTokens) < 2500, 'and not later than the call that crossed it');
  // the model never saw the refused calls
  assert.equal(server.requests.length, calls.length - refused.length);
  assert.equal(step.usage.inputTokens + step.usage.outputTokens, spent);

  // the agent's work so far is committed
  const made = git(f.project, 'ls-tree', '--name-only', r.json.branch).split('\n').filter((n) => n.startsWith('step-'));
  assert.ok(made.length >= 1 && made.length < 8, made.join(' '));
  assert.match(commitsOn(f.project, r.json.branch, r.json.baseSha)[0]!.subject, /^step\/implement \(coder\)/);
  assert.match(readFileSync(path.join(runDir, 'steps', 'implement.log'), 'utf8'), /runner gateway: model call refused: the budget is spent/);
  const shown = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
  assert.match(shown.stdout, /implement\s+budget_exhausted/);
});

// A hostile agent step (the preset's gateway, its own script): calls the model API through its gateway with curl.
const hostile = (server: ModelServer, extra: string, steps: string) => `version: 1
name: hostile
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
${extra}
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
steps:
${steps}`;
const CALL = `curl -s -o /dev/null -w '%{http_code}\\n' -H 'content-type: application/json' -H "x-api-key: $ANTHROPIC_API_KEY" -d '{"model":"claude-sonnet-4-5","max_tokens":10,"tools":[{"name":"t","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}' "$ANTHROPIC_BASE_URL/v1/messages"`;

test('calls at once cannot pass a budget together, and what is not a model call never leaves with the key', { timeout: 120_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({ turns: Array.from({ length: 40 }, () => ({ text: 'ok' })), usage: { input: 1000, output: 40 } });
  servers.push(server);
  const file = await writePipeline(f, hostile(server, '', `  - id: flood
    agent: coder
    timeout: 1m
    run: |
      for i in $(seq 1 12); do ( ${CALL} >> codes.txt ) & done; wait
      curl -s -o /dev/null -w '%{http_code}' -X POST -d '{}' "$ANTHROPIC_BASE_URL/v1/messages/batches" > batches.txt
`).replace('    base_url:', '    budget: { tokens: 2500 }\n    base_url:'));
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: 'sk-ant-api03-budget-test-key-000000000' } });
  assert.equal(r.json.steps.flood.status, 'budget_exhausted', JSON.stringify(r.json.steps.flood));
  // one at a time: three calls spend 3120 tokens; the others are refused, and the model never sees them
  assert.equal(server.requests.length, 3);
  const codes = git(f.project, 'show', `${r.json.branch}:codes.txt`).split('\n').sort();
  assert.deepEqual(codes, [...Array(3).fill('200'), ...Array(9).fill('400')].sort());
  assert.equal(git(f.project, 'show', `${r.json.branch}:batches.txt`), '403');
  const calls = readFileSync(path.join(f.home, 'runs', r.json.runId, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.equal(calls.filter((c) => c.refused === 'budget').length, 1, 'the refusals are said once, not a line a call');
  assert.equal(calls.filter((c) => c.refused === 'path').length, 1);
});

test('steps at once stop together when their calls spend the run budget', { timeout: 120_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({ turns: Array.from({ length: 200 }, () => ({ text: 'ok' })), usage: { input: 1000, output: 40 } });
  servers.push(server);
  const loop = `for i in $(seq 1 60); do ${CALL} >> codes.txt; sleep 0.2; done`;
  const file = await writePipeline(f, hostile(server, 'budget: { tokens: 8000 }', `  - id: left
    agent: coder
    needs: []
    timeout: 1m
    run: |
      ${loop}
  - id: right
    agent: coder
    needs: []
    timeout: 1m
    run: |
      ${loop}
`));
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: 'sk-ant-api03-budget-test-key-000000000' } });
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.steps.left.status, 'budget_exhausted');
  assert.equal(r.json.steps.right.status, 'budget_exhausted');
  // 8000 tokens are 8 calls of 1040; each step's gateway may let one more through before the stop lands
  assert.ok(server.requests.length >= 8 && server.requests.length <= 10, `${server.requests.length} calls reached the model`);
});
