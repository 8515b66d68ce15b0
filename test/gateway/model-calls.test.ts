import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isModelCall, upstreamUrl } from '../../src/gateway/model-calls.js';

test('only model calls go out with the key', () => {
  assert.ok(isModelCall('anthropic', 'POST', '/v1/messages?beta=true'));
  assert.ok(isModelCall('anthropic', 'POST', '/v1/messages/count_tokens'));
  assert.ok(isModelCall('anthropic', 'GET', '/v1/models'));
  assert.ok(!isModelCall('anthropic', 'POST', '/v1/messages/batches'));
  assert.ok(!isModelCall('anthropic', 'GET', '/v1/messages'));
  assert.ok(!isModelCall('anthropic', 'POST', '/v1/files'));
  assert.ok(!isModelCall('anthropic', 'POST', '/v1/responses'), "another API's path");
  assert.ok(isModelCall('openai', 'POST', '/v1/responses'));
  assert.ok(isModelCall('openai', 'POST', '/v1/chat/completions'));
  assert.ok(!isModelCall('openai', 'POST', '/v1/batches'));
  assert.ok(!isModelCall('openai', 'POST', '/v1/fine_tuning/jobs'));
  assert.ok(!isModelCall('anthropic', 'POST', '/v1/messages/../files'));
});

test("a call's path stays on the model's host", () => {
  assert.equal(upstreamUrl('https://api.anthropic.com', '/v1/messages').href, 'https://api.anthropic.com/v1/messages');
  assert.equal(upstreamUrl('http://m:8080/v1/', '/v1/responses').href, 'http://m:8080/v1/responses');
  assert.equal(upstreamUrl('https://proxy.corp/anthropic', '/v1/messages').href, 'https://proxy.corp/anthropic/v1/messages');
  assert.equal(upstreamUrl('https://api.anthropic.com', '@evil.example/v1/messages').host, 'api.anthropic.com');
});

// Live: the gateway's model route in this process, on 127.0.0.1, in front of a model that bills (test/fixtures/priced-model.ts).
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after } from 'node:test';
import type { Allowance, CallEvent, GatewayEvent } from '../../src/gateway/config.js';
import { Refusals } from '../../src/gateway/egress.js';
import { Ledger } from '../../src/gateway/ledger.js';
import { DEFAULT_PRICES } from '../../src/gateway/prices.js';
import { ModelCalls, modelCallUrl } from '../../src/gateway/model-calls.js';
import { gatewayServer } from '../../src/gateway/server.js';
import { PricedModel, type PricedScript } from '../fixtures/priced-model.js';

const closers: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const c of closers) await c();
});

async function gatewayFor(kind: 'anthropic' | 'openai', script: PricedScript, allowance?: Allowance) {
  const model = await PricedModel.start(script);
  const events: GatewayEvent[] = [];
  const calls = new ModelCalls({ kind, upstream: `http://127.0.0.1:${model.port}` }, new Ledger(allowance), DEFAULT_PRICES, (e) => events.push(e), { count: 0 });
  const server = gatewayServer({ allow: [], prices: DEFAULT_PRICES, listenSubnet: '127.0.0.0/8' }, calls, { allow: [], refusals: new Refusals(() => undefined), policy: { hostAddresses: [], privateAllowed: [] } });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  closers.push(() => model.close(), () => {
    server.closeAllConnections();
    server.close();
  });
  const called = () => events.filter((e): e is CallEvent => e.event === 'call' && !e.refused);
  return { model, calls, events, called, port };
}

/** A step's request; it hangs up once the answer holds `until` (or after `afterMs`), or reads it all. */
function ask(port: number, path: string, body: unknown, hangUp: { until?: string; afterMs?: number } = {}): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const data = JSON.stringify(body);
    const req = http.request({ host: '127.0.0.1', port, path, method: body === undefined ? 'GET' : 'POST', headers: { 'content-type': 'application/json', 'x-api-key': 'placeholder' } }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => {
        text += c.toString();
        if (hangUp.until && text.includes(hangUp.until)) {
          req.destroy();
          resolve({ status: res.statusCode ?? 0, text });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', () => resolve({ status: 0, text: '' }));
    if (hangUp.afterMs !== undefined) setTimeout(() => req.destroy(), hangUp.afterMs);
    req.end(body === undefined ? undefined : data);
  });
}

const until = async (what: string, ok: () => boolean, ms = 5000) => {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('a streamed chat call without include_usage is made to report it, and is metered', async () => {
  const g = await gatewayFor('openai', { input: 100_000, output: 64_000 });
  const r = await ask(g.port, '/v1/chat/completions', { model: 'gpt-5', stream: true, max_tokens: 64_000, messages: [] });
  assert.equal(r.status, 200);
  assert.equal(g.model.requests[0]!.body.stream_options.include_usage, true);
  await until('the call is settled', () => g.called().length === 1);
  assert.deepEqual([g.called()[0]!.inputTokens, g.called()[0]!.outputTokens, g.called()[0]!.worstCase], [100_000, 64_000, undefined]);
});

test('a Responses call whose step hangs up before response.completed is read on for its usage', async () => {
  const g = await gatewayFor('openai', { input: 100_000, output: 64_000, usageAfterMs: 300 });
  await ask(g.port, '/v1/responses', { model: 'gpt-5', stream: true, input: 'x' }, { until: 'a long answer' });
  await until('the call is settled', () => g.called().length === 1);
  assert.equal(g.model.requests[0]!.finished, true, 'the model finished its answer');
  assert.deepEqual([g.called()[0]!.inputTokens, g.called()[0]!.outputTokens, g.called()[0]!.worstCase], [100_000, 64_000, undefined]);
});

test('an Anthropic stream cut after content_block_stop still counts its message_delta', async () => {
  const g = await gatewayFor('anthropic', { input: 100_000, output: 64_000, usageAfterMs: 300 });
  await ask(g.port, '/v1/messages', { model: 'claude-sonnet-4-5', stream: true, max_tokens: 64_000, messages: [] }, { until: 'content_block_stop' });
  await until('the call is settled', () => g.called().length === 1);
  assert.equal(g.called()[0]!.outputTokens, 64_000);
});

test('a call abandoned before its answer came is still counted when it comes', async () => {
  const g = await gatewayFor('anthropic', { input: 100_000, output: 64_000, headersAfterMs: 400 });
  const r = await ask(g.port, '/v1/messages', { model: 'claude-sonnet-4-5', stream: true, max_tokens: 64_000, messages: [] }, { afterMs: 100 });
  assert.equal(r.status, 0);
  await until('the call is settled', () => g.called().length === 1);
  assert.deepEqual([g.called()[0]!.inputTokens, g.called()[0]!.outputTokens], [100_000, 64_000]);
});

test('an answer without usage, or still open when the gateway stops, is charged its worst case', async () => {
  const g = await gatewayFor('anthropic', { input: 100_000, output: 64_000, noUsage: true });
  const body = { model: 'claude-sonnet-4-5', stream: true, max_tokens: 32_000, messages: [] };
  await ask(g.port, '/v1/messages', body);
  await until('the call is settled', () => g.called().length === 1);
  assert.deepEqual([g.called()[0]!.inputTokens, g.called()[0]!.outputTokens, g.called()[0]!.worstCase], [100_000, 32_000, true]);
  g.model.script = { input: 100_000, output: 64_000, hang: true };
  void ask(g.port, '/v1/messages', body, { until: 'message_start' });
  await until('the model got it', () => g.model.requests.length === 2);
  g.calls.abandonAll();
  assert.equal(g.called().length, 2);
  assert.deepEqual([g.called()[1]!.outputTokens, g.called()[1]!.worstCase], [32_000, true]);
  assert.ok((g.called()[1]!.costUsd ?? 0) > 0.3, 'priced as the model asked for');
});

test('a budget binds whatever the step does with its calls: the first one crosses it, the rest are refused', async () => {
  const g = await gatewayFor('openai', { input: 100_000, output: 64_000, usageAfterMs: 50 }, { usd: 0.05 });
  const answers = await Promise.all(Array.from({ length: 10 }, () => ask(g.port, '/v1/chat/completions', { model: 'gpt-5', stream: true, messages: [] }, { until: 'a long answer' })));
  assert.ok(answers.every((a) => a.status === 200 || a.status === 400), answers.map((a) => a.status).join(' '));
  await until('all settled', () => g.model.requests.every((r) => r.finished) && g.called().length === g.model.requests.length);
  assert.equal(g.model.requests.length, 1, 'one call went out, the others found the budget spent');
  assert.ok(g.called()[0]!.costUsd! > 0.05);
});

test('a path is judged as it goes out: /v1/models/.. is not a model call, and a flood of refusals is a count', async () => {
  const g = await gatewayFor('anthropic', { input: 1, output: 1 });
  for (const p of ['/v1/models/..', '/v1/models/%2e%2e', '/v1/models/.%2E/files', '/v1/messages/../files', '/v1//files', '/v1/models/x/..']) {
    assert.equal((await ask(g.port, p, undefined)).status, 403, p);
  }
  for (let i = 0; i < 200; i++) await ask(g.port, '/v1/files', undefined);
  assert.equal(g.model.requests.length, 0, 'the model host saw none of them');
  assert.equal(g.calls.pathRefusals.count, 206);
  assert.ok(g.events.filter((e) => e.event === 'call' && e.refused === 'path').length <= 20, 'said once per path, within a bound');
  assert.equal((await ask(g.port, '/v1/models/claude-sonnet-4-5', undefined)).status, 200);
  assert.equal(modelCallUrl({ kind: 'anthropic', upstream: 'https://proxy.corp/anthropic/v1' }, 'GET', '/v1/models/..'), undefined);
  assert.equal(modelCallUrl({ kind: 'anthropic', upstream: 'https://proxy.corp/anthropic/v1' }, 'POST', '/v1/messages')?.url.href, 'https://proxy.corp/anthropic/v1/messages');
});

test('a background response is refused: it runs after its answer, where nothing could meter it', async () => {
  const g = await gatewayFor('openai', { input: 100_000, output: 64_000 });
  const r = await ask(g.port, '/v1/responses', { model: 'gpt-5', background: true, previous_response_id: 'resp_1', input: 'go on' });
  assert.equal(r.status, 403);
  assert.match(r.text, /background response/);
  assert.equal(g.model.requests.length, 0);
});

test('each call says its worst case before it goes; an unpriced one is charged the dearest price against a USD budget', async () => {
  const g = await gatewayFor('openai', { input: 100_000, output: 64_000 }, { usd: 1000 });
  await ask(g.port, '/v1/responses', { model: 'gpt-6-preview', stream: true, max_output_tokens: 1000, previous_response_id: 'resp_1', input: 'x' });
  await until('settled', () => g.called().length === 1);
  const start = g.events.find((e) => e.event === 'call_start');
  assert.ok(start && start.event === 'call_start');
  assert.deepEqual([start.worst.inputTokens, start.worst.outputTokens], [1_000_000, 1000], 'stored input counts as the most it may be');
  const call = g.called()[0]!;
  assert.equal(call.id, start.id);
  assert.equal(call.costUsd, null, 'its record says unpriced');
  assert.ok((call.chargedUsd ?? 0) > 10, `the budgets were charged the dearest price: $${call.chargedUsd}`);
});

test('request bodies wait for room: many large ones at once are read a few at a time, and all are answered', async () => {
  const g = await gatewayFor('anthropic', { input: 1, output: 1 });
  const big = 'a'.repeat(20 * 1024 * 1024);
  const answers = await Promise.all(Array.from({ length: 6 }, () => ask(g.port, '/v1/messages', { model: 'claude-sonnet-4-5', max_tokens: 5, messages: [{ role: 'user', content: big }] })));
  assert.deepEqual(answers.map((a) => a.status), Array(6).fill(200));
  assert.equal(g.model.requests.length, 6);
  const tooBig = await ask(g.port, '/v1/messages', { pad: 'a'.repeat(33 * 1024 * 1024) });
  assert.equal(tooBig.status, 413);
});
