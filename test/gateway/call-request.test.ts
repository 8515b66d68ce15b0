import assert from 'node:assert/strict';
import { test } from 'node:test';
import { DEFAULT_MAX_OUTPUT, readCallRequest, STORED_INPUT_TOKENS, worstCaseTokens } from '../../src/gateway/call-request.js';

const json = (o: unknown) => Buffer.from(JSON.stringify(o));

test('a streamed chat request is made to ask for its usage; other options stay', () => {
  const r = readCallRequest('POST', '/v1/chat/completions', json({ model: 'gpt-5', stream: true, stream_options: { x: 1 }, messages: [] }));
  assert.deepEqual(JSON.parse(r.body.toString()).stream_options, { x: 1, include_usage: true });
  const plain = readCallRequest('POST', '/v1/completions', json({ model: 'gpt-5', stream: true, prompt: 'x' }));
  assert.deepEqual(JSON.parse(plain.body.toString()).stream_options, { include_usage: true });
  // already asking, or not streaming: the body goes as it came, byte for byte
  for (const body of [json({ stream: true, stream_options: { include_usage: true } }), json({ stream: false }), Buffer.from('not json')]) {
    assert.equal(readCallRequest('POST', '/v1/chat/completions', body).body, body);
  }
  const messages = json({ model: 'claude-sonnet-4-5', stream: true, max_tokens: 64000 });
  assert.equal(readCallRequest('POST', '/v1/messages', messages).body, messages, 'Anthropic streams always report usage');
});

test('the most output a call allows: its limit times its choices, else the default', () => {
  assert.equal(readCallRequest('POST', '/v1/messages', json({ max_tokens: 64000 })).maxOutput, 64000);
  assert.equal(readCallRequest('POST', '/v1/responses', json({ max_output_tokens: 5000 })).maxOutput, 5000);
  assert.equal(readCallRequest('POST', '/v1/responses', json({})).maxOutput, DEFAULT_MAX_OUTPUT);
  assert.equal(readCallRequest('POST', '/v1/chat/completions', json({ max_completion_tokens: 1000, max_tokens: 9, n: 3 })).maxOutput, 3000);
  assert.equal(readCallRequest('POST', '/v1/completions', json({ max_tokens: 10, best_of: 5, n: 2 })).maxOutput, 50);
  for (const odd of [-1, 0, 'lots', 1e300, null]) assert.equal(readCallRequest('POST', '/v1/messages', json({ max_tokens: odd })).maxOutput, odd === 1e300 ? 10_000_000 : DEFAULT_MAX_OUTPUT, String(odd));
  assert.equal(readCallRequest('POST', '/v1/messages', Buffer.from('{')).maxOutput, DEFAULT_MAX_OUTPUT);
});

test('only calls that generate cost when their answer is lost', () => {
  assert.equal(readCallRequest('POST', '/v1/messages', json({})).generates, true);
  assert.equal(readCallRequest('POST', '/v1/messages/count_tokens', json({})).generates, false);
  assert.equal(readCallRequest('GET', '/v1/models', Buffer.alloc(0)).generates, false);
  assert.equal(readCallRequest('POST', '/v1/messages', json({ model: 'claude-haiku-4-5' })).model, 'claude-haiku-4-5');
});

test('the worst case: the input reported, else the request as tokens; the output allowed', () => {
  const none = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
  assert.deepEqual(worstCaseTokens({ maxOutput: 64000, storedInput: false }, 400_000, none), { inputTokens: 400_000, outputTokens: 64000, cacheReadTokens: 0, cacheWriteTokens: 0 });
  // Anthropic's message_start said the input: that is what it cost
  assert.deepEqual(worstCaseTokens({ maxOutput: 64000, storedInput: false }, 400_000, { inputTokens: 100_000, outputTokens: 1, cacheReadTokens: 5, cacheWriteTokens: 0 }), { inputTokens: 100_000, outputTokens: 64000, cacheReadTokens: 5, cacheWriteTokens: 0 });
  assert.equal(worstCaseTokens({ maxOutput: 10, storedInput: false }, 5, { ...none, outputTokens: 30 }).outputTokens, 30, 'never less than what was reported');
});

test('input stored at the provider is charged as big as it may be; a background response is refused', () => {
  for (const body of [{ previous_response_id: 'resp_1', input: 'go on' }, { conversation: 'conv_1' }, { prompt: { id: 'pmpt_1' } }, { input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file-1' }] }] }]) {
    const r = readCallRequest('POST', '/v1/responses', json(body));
    assert.equal(r.storedInput, true, JSON.stringify(body));
    const none = { inputTokens: 0, outputTokens: 0, cacheReadTokens: 0, cacheWriteTokens: 0 };
    assert.equal(worstCaseTokens(r, 200, none).inputTokens, STORED_INPUT_TOKENS);
  }
  assert.equal(readCallRequest('POST', '/v1/responses', json({ input: 'hi', prompt: 'a plain prompt string' })).storedInput, false);
  assert.match(readCallRequest('POST', '/v1/responses', json({ background: true, input: 'x' })).refusal ?? '', /background response .* cannot meter it/);
  assert.equal(readCallRequest('POST', '/v1/responses', json({ background: false, input: 'x' })).refusal, undefined);
});
