/**
 * Attacks on the hardened gateway (issue 22) that still work: each test plays
 * a hostile step for real (the real engine, the gateway's image, the CLI) and
 * says what should hold. They fail until the gateway is fixed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, test } from 'node:test';
import { startFakeInternet } from '../fixtures/fake-internet.js';
import { bridgeGateway } from '../fixtures/model-server.js';
import { PricedModel } from '../fixtures/priced-model.js';
import { execPipeline, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: Array<{ close(): Promise<void> }> = [];
after(() => Promise.all(servers.map((s) => s.close())));
const KEY = { ANTHROPIC_API_KEY: 'sk-ant-api03-attack-test-key-0000000000', OPENAI_API_KEY: 'sk-proj-attack-test-key-00000000000000' };

/** A step's script in Node (the agent images carry it), written to a file and run. */
const nodeStep = (js: string) => `cat > /tmp/attack.js <<'EOF'\n${js.trim()}\nEOF\nnode /tmp/attack.js | tee attack.txt`;

// A budgeted step sends its call (the model starts answering: 100k tokens in, up to 64k out), then drowns
// its gateway in request bodies just under the 32 MiB limit, sent at once: each is read whole before the
// one-at-a-time queue, so a few of them passed the gateway's 256 MB and the kernel killed it. The call in
// flight died with it, unmetered: the step's usage, the run's and the day's spend never saw it. Now bodies
// are read only when there is room (64 MiB at once), and the call is charged when the step ends.
test('a step cannot drown its gateway in request bodies (ten of 31 MiB at once): they wait for room, and the call in flight is charged', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const model = await PricedModel.start({ input: 100_000, output: 64_000, hang: true }, '0.0.0.0');
  servers.push(model);
  const js = `
const http = require('http');
const post = (body) => new Promise((ok) => {
  const r = http.request({ host: 'runner-gateway', port: 3128, path: '/v1/messages', method: 'POST', headers: { 'content-type': 'application/json', 'content-length': body.length } }, (res) => { res.resume(); res.on('end', () => ok(res.statusCode)); res.on('error', () => ok('cut')); });
  r.on('error', (e) => ok('error ' + e.code));
  r.end(body);
});
(async () => {
  post(Buffer.from(JSON.stringify({ model: 'claude-sonnet-4-5', stream: true, max_tokens: 64000, messages: [{ role: 'user', content: 'hi' }] }))).then((c) => console.log('call=' + c));
  await new Promise((r) => setTimeout(r, 2000));
  const big = Buffer.alloc(31 * 1024 * 1024, 0x61);
  const codes = await Promise.all(Array.from({ length: 10 }, () => post(big)));
  console.log('flood=' + codes.join(','));
  await new Promise((r) => setTimeout(r, 3000));
  process.exit(0);
})();`;
  const file = await writePipeline(f, `version: 1
name: kill-gateway
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  coder: { use: claude-code, base_url: "http://${bridgeGateway()}:${model.port}", budget: { usd: 0.05 } }
steps:
  - id: oom
    agent: coder
    timeout: 20s
    run: ${JSON.stringify(nodeStep(js))}
`);
  const r = await execPipeline(f, file, [], { env: KEY });
  const step = r.json.steps.oom;
  const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'oom.log'), 'utf8');
  console.log(JSON.stringify({ status: step.status, message: step.message, usage: step.usage, requests: model.requests.length }));
  console.log(log.split('\n').filter((l) => /^(call|flood)=|runner gateway/.test(l)).join('\n'));
  assert.equal(model.requests.length, 1, 'the call reached the model, which started answering (100k tokens in)');
  assert.ok((step.usage?.inputTokens ?? 0) >= 100_000, `the call sent is charged (at least the input the model reported): ${JSON.stringify(step.usage)}; ${step.message}`);
  assert.ok((step.usage?.costUsd ?? 0) > 0.05, `and the step's cost says so: ${JSON.stringify(step.usage)}`);
});

// OpenAI's Responses API runs a call in the background (`background: true`): it answers at once, queued,
// with no usage, and the model works on, billing what it reads. With `previous_response_id` (or a stored
// conversation, prompt or file) a request of 200 bytes carries 100k tokens of input. The gateway charges
// such an answer its worst case, with the input "as many tokens as the request had bytes": a few
// hundredths of a cent a call, so a $0.05 budget lets dozens through, each billed 100k tokens.
test('a budget binds calls the model runs in the background on stored input (previous_response_id): one call past $0.05 at most', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const http = await import('node:http');
  const requests: any[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
      requests.push({ path: req.url, body });
      // as OpenAI does: queued, usage null; the run goes on (and is billed) on the provider's side
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ id: `resp_${requests.length}`, object: 'response', status: 'queued', background: true, model: 'gpt-5', output: [], usage: null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '0.0.0.0', r));
  servers.push({ close: () => new Promise<void>((r) => server.close(() => r())) });
  const port = (server.address() as import('node:net').AddressInfo).port;
  const call = JSON.stringify({ model: 'gpt-5', background: true, store: true, previous_response_id: 'resp_with_100k_tokens_of_context', max_output_tokens: 16, input: 'go on' });
  const file = await writePipeline(f, `version: 1
name: background
project: { path: project, push: never }
secrets: [OPENAI_API_KEY]
agents:
  coder: { use: codex, base_url: "http://${bridgeGateway()}:${port}/v1", budget: { usd: 0.05 } }
steps:
  - id: background
    agent: coder
    timeout: 2m
    run: ${JSON.stringify(`for i in $(seq 1 30); do curl -s -o /dev/null -w '%{http_code}\\n' -H 'content-type: application/json' -d '${call}' http://runner-gateway:3128/v1/responses >> codes.txt; done; sort codes.txt | uniq -c`)}
`);
  const r = await execPipeline(f, file, [], { env: KEY });
  const step = r.json.steps.background;
  console.log(JSON.stringify({ status: step.status, usage: step.usage, requests: requests.length }));
  // each call the model ran read the 100k tokens the stored response holds: $0.125 at gpt-5's price
  assert.ok(requests.length <= 1, `${requests.length} background calls on 100k stored tokens reached the model (≈ $${(requests.length * 0.125).toFixed(2)}) under a $0.05 budget, charged $${step.usage.costUsd}`);
});

// A model the price table does not know is charged, against a USD budget, at the dearest price known:
// but only in the gateway's own ledger. Its call event says costUsd: null, and the runner adds `?? 0` to
// the run's spend (and the day's, read from the records), so the run's budget never sees the call.
// Each step starts with the run's whole budget again: three steps, three calls of 100k in / 64k out
// (≈ $6.30 each at the dearest price) under a run budget of $0.05.
test("a run's USD budget counts calls to a model the price table does not know: no step after the one that spent it calls the model", { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const model = await PricedModel.start({ input: 100_000, output: 64_000 }, '0.0.0.0');
  servers.push(model);
  const call = `curl -sN -o /dev/null -w '%{http_code}\\n' -H 'content-type: application/json' -d '{"model":"gpt-6-preview","stream":true,"max_output_tokens":64000,"input":"hi"}' http://runner-gateway:3128/v1/responses`;
  const steps = ['one', 'two', 'three'].map((id, i) => `  - id: ${id}
    agent: coder
    ${i ? `needs: [${['one', 'two'][i - 1]}]` : 'needs: []'}
    continue_on_error: true
    timeout: 1m
    run: ${JSON.stringify(`${call}; ${call}`)}`).join('\n');
  const file = await writePipeline(f, `version: 1
name: unpriced
project: { path: project, push: never }
secrets: [OPENAI_API_KEY]
budget: { usd: 0.05 }
agents:
  coder: { use: codex, base_url: "http://${bridgeGateway()}:${model.port}/v1" }
steps:
${steps}
`);
  const r = await execPipeline(f, file, [], { env: KEY });
  const summary = Object.fromEntries(['one', 'two', 'three'].map((id) => [id, { status: r.json.steps[id]?.status, usage: r.json.steps[id]?.usage }]));
  console.log(JSON.stringify({ requests: model.requests.length, summary }));
  const calls = readFileSync(path.join(f.home, 'runs', r.json.runId, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  console.log(calls.filter((c) => !c.refused).map((c) => `${c.step}: ${c.model} ${c.inputTokens}+${c.outputTokens} tokens, costUsd ${c.costUsd}`).join('\n'));
  assert.equal(model.requests.length, 1, `${model.requests.length} calls of 164k tokens to an unpriced model reached it under a run budget of $0.05 (one step's call crosses it; the steps after must be refused)`);
});

// The address policy's "reserved" is 240.0.0.0/4 alone: the special-purpose ranges that are not on the
// internet (TEST-NET 192.0.2.0/24, 198.51.100.0/24, 203.0.113.0/24, benchmarking 198.18.0.0/15, IETF
// 192.0.0.0/24) are let through as if public, with no --egress-private. They are used as LANs: this very
// machine's eth0 is 192.0.2.2/24, its router 192.0.2.1. A LAN in such a range (the fake internet, put in
// 198.51.100.0/24 here) is reached by any allowed name that resolves into it.
test('an allowed name never leads to a network this machine is on, whatever its range (a LAN in 198.51.100.0/24), unless --egress-private allows it', { timeout: 180_000 }, async () => {
  const lan = startFakeInternet(['allowed.example'], undefined, { subnet: '198.51.100.0/24' });
  try {
    const f = await fixture();
    const file = await writePipeline(f, `version: 1
name: reserved
project: { path: project }
steps:
  - id: probe
    image: runner/toolchain:latest
    egress: [allowed.example]
    timeout: 1m
    run: echo "lan=$(curl -s -m 5 -w ' %{http_code}' http://allowed.example/)"
`);
    // the fake internet's own name server is not needed: the engine's resolves its aliases
    const r = await execPipeline(f, file, ['--egress-network', lan.network]);
    const log = readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'probe.log'), 'utf8');
    console.log(`allowed.example is ${lan.ips['allowed.example']}; ${log.trim()}`);
    assert.doesNotMatch(log, /this is allowed\.example/, `a host at ${lan.ips['allowed.example']} was reached without --egress-private`);
    assert.match(log, /^lan=runner gateway: allowed\.example refused \(leads where a step may not go \([\d.]+: on a network this machine is on \(its LAN or a bridge\), not the internet/m, log);
  } finally {
    lan.close();
  }
});

// However the gateway dies (out of memory, killed) with a call open, the model may be working on it: the runner
// knows each call's worst case from its call_start and charges it, so the step's usage and the budgets see it.
test('a gateway that dies with a call open: the runner charges that call its worst case', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const model = await PricedModel.start({ input: 100_000, output: 64_000, hang: true }, '0.0.0.0');
  servers.push(model);
  const file = await writePipeline(f, `version: 1
name: gateway-dies
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
agents:
  coder: { use: claude-code, base_url: "http://${bridgeGateway()}:${model.port}" }
steps:
  - id: call
    agent: coder
    timeout: 1m
    run: ${JSON.stringify(`curl -sN -m 30 -H 'content-type: application/json' -d '{"model":"claude-sonnet-4-5","stream":true,"max_tokens":64000,"messages":[]}' http://runner-gateway:3128/v1/messages > /dev/null || true`)}
`);
  const running = execPipeline(f, file, [], { env: KEY });
  const deadline = Date.now() + 60_000;
  while (model.requests.length === 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
  assert.equal(model.requests.length, 1, 'the call reached the model');
  execFileSync('docker', ['kill', ...execFileSync('docker', ['ps', '-q', '--filter', `label=dev.runner.home=${f.home}`, '--filter', 'label=dev.runner.role=gateway'], { encoding: 'utf8' }).split('\n').filter(Boolean)]);
  const r = await running;
  const step = r.json.steps.call;
  assert.equal(step.status, 'failed', JSON.stringify(step));
  assert.match(step.message, /gateway stopped before its step ended/);
  assert.equal(step.usage.outputTokens, 64_000, `charged the output it allowed: ${JSON.stringify(step.usage)}`);
  assert.ok(step.usage.costUsd > 0.9, `$${step.usage.costUsd}`);
  const calls = readFileSync(path.join(f.home, 'runs', r.json.runId, 'calls.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(calls.map((c) => [c.worstCase, c.outputTokens]), [[true, 64_000]]);
});
