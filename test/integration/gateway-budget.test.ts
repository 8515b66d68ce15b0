/**
 * Budgets enforced live: an agent with a budget of a few thousand tokens is
 * refused its next model call once they are spent; the step ends
 * budget_exhausted with its work committed and the figures in its record.
 */
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { bridgeGateway, ModelServer } from '../fixtures/model-server.js';
import { PricedModel } from '../fixtures/priced-model.js';
import { commitsOn, execPipeline, git, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: Array<{ close(): Promise<void> }> = [];
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

// The four ways a step once used the model while almost nothing was metered, each against a $0.05 budget that never bound.
// Each answer is 100k tokens in and 64k out; one call costs far more than the budget, so the first crosses it and no other may go.
test('a budget binds whatever the step does with its calls: cut streams, hang-ups, no usage asked for', { timeout: 600_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const big = { input: 100_000, output: 64_000 };
  const models = {
    chat: await PricedModel.start(big, '0.0.0.0'),
    responses: await PricedModel.start({ ...big, usageAfterMs: 1500 }, '0.0.0.0'),
    messages: await PricedModel.start({ ...big, usageAfterMs: 1500 }, '0.0.0.0'),
    abandoned: await PricedModel.start({ ...big, headersAfterMs: 2500 }, '0.0.0.0'),
  };
  for (const m of Object.values(models)) servers.push(m);
  const at = (m: PricedModel) => `http://${bridgeGateway()}:${m.port}`;
  const post = (path: string, body: object, then: string) =>
    `for i in $(seq 1 20); do curl -sN ${then.startsWith('-m') ? then : ''} -H 'content-type: application/json' -d '${JSON.stringify(body)}' http://runner-gateway:3128${path} ${then.startsWith('-m') ? '> /dev/null || true' : `| sed -n '/${then}/q'`}; echo "call $i" >> calls.txt; done`;
  const file = await writePipeline(f, `version: 1
name: dodge
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY, OPENAI_API_KEY]
agents:
  chat: { use: codex, base_url: "${at(models.chat)}/v1", budget: { usd: 0.05 } }
  responses: { use: codex, base_url: "${at(models.responses)}/v1", budget: { usd: 0.05 } }
  messages: { use: claude-code, base_url: "${at(models.messages)}", budget: { usd: 0.05 } }
  abandoned: { use: claude-code, base_url: "${at(models.abandoned)}", budget: { tokens: 5000 } }
steps:
  - id: chat
    agent: chat
    needs: []
    continue_on_error: true
    timeout: 2m
    run: ${JSON.stringify(post('/v1/chat/completions', { model: 'gpt-5', stream: true, max_tokens: 64000, messages: [{ role: 'user', content: 'hi' }] }, 'DONE'))}
  - id: responses
    agent: responses
    needs: []
    continue_on_error: true
    timeout: 2m
    run: ${JSON.stringify(post('/v1/responses', { model: 'gpt-5', stream: true, input: 'hi' }, 'output_text.delta'))}
  - id: messages
    agent: messages
    needs: []
    continue_on_error: true
    timeout: 2m
    run: ${JSON.stringify(post('/v1/messages', { model: 'claude-sonnet-4-5', stream: true, max_tokens: 64000, messages: [{ role: 'user', content: 'hi' }] }, 'content_block_stop'))}
  - id: abandoned
    agent: abandoned
    needs: []
    continue_on_error: true
    timeout: 2m
    run: ${JSON.stringify(post('/v1/messages', { model: 'claude-sonnet-4-5', stream: true, max_tokens: 64000, messages: [{ role: 'user', content: 'hi' }] }, '-m 1'))}
`);
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: 'sk-ant-api03-budget-test-key-000000000', OPENAI_API_KEY: 'sk-proj-budget-test-key-0000000000000' } });
  assert.equal(r.code, 0, r.stderr); // each step continues on error: all four are played in one run
  // the bound: one call's worst case past the budget (its whole input and the output it allowed, at the model's price)
  const bound = { chat: 0.05 + 0.125 + 0.64, responses: 0.05 + 0.125 + 1.28, messages: 0.05 + 0.3 + 0.96 };
  for (const [id, m] of Object.entries(models)) {
    const step = r.json.steps[id];
    assert.equal(step.status, 'budget_exhausted', `${id}: ${JSON.stringify(step)}`);
    assert.equal(m.requests.length, 1, `${id}: one call reached the model; the budget refused the rest`);
    assert.equal(step.usage.inputTokens, 100_000, id);
    assert.equal(step.usage.outputTokens, 64_000, `${id}: the answer's usage was read, though the step hung up or asked for none`);
    if (id in bound) assert.ok(step.usage.costUsd > 0.05 && step.usage.costUsd <= bound[id as keyof typeof bound], `${id}: $${step.usage.costUsd}`);
  }
  console.log(Object.keys(models).map((id) => `${id}: ${r.json.steps[id].status}, ${models[id as keyof typeof models].requests.length} call, charged $${r.json.steps[id].usage.costUsd} (${r.json.steps[id].usage.inputTokens}+${r.json.steps[id].usage.outputTokens} tokens)`).join('; '));
  assert.equal(models.chat.requests[0]!.body.stream_options?.include_usage, true, 'the gateway asked for the usage');
  assert.equal(models.responses.requests[0]!.finished, true, 'read on after the step hung up');
});

test('an answer still open when its step ends is charged its worst case; a flood of calls keeps calls.jsonl bounded and the totals exact', { timeout: 600_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const hung = await PricedModel.start({ input: 100_000, output: 64_000, hang: true }, '0.0.0.0');
  const models = await PricedModel.start({ input: 1, output: 1 }, '0.0.0.0');
  servers.push(hung, models);
  const flood = `node -e '
const http = require("http"); const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const get = (path) => new Promise((ok) => http.get({ host: "runner-gateway", port: 3128, path, agent }, (r) => { r.resume(); r.on("end", () => ok(r.statusCode)); }).on("error", () => ok(0)));
(async () => { const codes = {}; const run = async (path, n) => { for (let i = 0; i < n; i++) { const c = await get(path); codes[path + " " + c] = (codes[path + " " + c] || 0) + 1; } };
  await Promise.all(Array.from({ length: 8 }, () => run("/v1/files", 2500)));
  await Promise.all(Array.from({ length: 8 }, () => run("/v1/models", 1400)));
  console.log(JSON.stringify(codes)); })();'`;
  const file = await writePipeline(f, `version: 1
name: leftovers
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  hung: { use: claude-code, base_url: "http://${bridgeGateway()}:${hung.port}" }
  flood: { use: claude-code, base_url: "http://${bridgeGateway()}:${models.port}" }
steps:
  - id: hung
    agent: hung
    timeout: 1m
    run: ${JSON.stringify(`curl -sN -m 2 -H 'content-type: application/json' -d '{"model":"claude-sonnet-4-5","stream":true,"max_tokens":32000,"messages":[]}' http://runner-gateway:3128/v1/messages > /dev/null || true`)}
  - id: flood
    agent: flood
    timeout: 3m
    run: ${JSON.stringify(flood)}
`);
  const r = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: 'sk-ant-api03-budget-test-key-000000000' } });
  assert.equal(r.code, 0, `${r.stderr}\n${r.stdout}`);
  const runDir = path.join(f.home, 'runs', r.json.runId);
  const hungStep = r.json.steps.hung;
  assert.deepEqual([hungStep.usage.inputTokens, hungStep.usage.outputTokens], [100_000, 32_000], 'its input as reported, its output as allowed');
  assert.match(readFileSync(path.join(runDir, 'steps', 'hung.log'), 'utf8'), /runner gateway: a model call ended without its usage \(the step hung up, or the answer was cut\): charged its worst case, 132000 tokens, \$0\.7800/);
  const lines = readFileSync(path.join(runDir, 'calls.jsonl'), 'utf8').trim().split('\n');
  const size = statSync(path.join(runDir, 'calls.jsonl')).size;
  const floodCalls = lines.map((l) => JSON.parse(l)).filter((c) => c.step === 'flood');
  assert.ok(floodCalls.length <= 10_001, `${floodCalls.length} lines for 20,000 refused and 11,200 answered requests`);
  assert.ok(floodCalls.filter((c) => c.refused === 'path').length === 1, 'a refused path is said once');
  assert.equal(r.json.steps.flood.usage.calls, 11_200, 'the totals count every call');
  assert.equal(models.requests.length, 11_200);
  const log = readFileSync(path.join(runDir, 'steps', 'flood.log'), 'utf8');
  assert.match(log, /runner gateway: refused 20000 requests that were not model calls/);
  assert.match(log, /more than 10000 model calls: calls\.jsonl lists the first 10000 of this step, its usage counts them all/);
  console.log(`calls.jsonl after 31,200 requests: ${lines.length} lines, ${size} bytes`);
});
