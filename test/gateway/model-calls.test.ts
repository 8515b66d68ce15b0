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
