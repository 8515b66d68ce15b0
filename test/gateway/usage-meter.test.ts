import assert from 'node:assert/strict';
import { test } from 'node:test';
import { UsageMeter, type MeteredUsage, type ModelApiKind } from '../../src/gateway/usage-meter.js';

const SSE = 'text/event-stream';
const JSON_TYPE = 'application/json';

function meter(kind: ModelApiKind, contentType: string | undefined, chunks: (string | Buffer)[], maxBytes?: number): MeteredUsage {
  const m = new UsageMeter(kind, contentType, maxBytes);
  for (const c of chunks) m.push(typeof c === 'string' ? Buffer.from(c) : c);
  return m.end();
}

const usage = (model: string | null, inputTokens: number, outputTokens: number, cacheReadTokens = 0, cacheWriteTokens = 0): MeteredUsage => ({
  model,
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens,
});

const sse = (...events: [string | null, unknown][]): string =>
  events.map(([name, data]) => `${name === null ? '' : `event: ${name}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`).join('');

const ANTHROPIC_STREAM = sse(
  ['message_start', { type: 'message_start', message: { id: 'msg_1', type: 'message', role: 'assistant', model: 'claude-sonnet-4-5-20250929', content: [], usage: { input_tokens: 12, cache_creation_input_tokens: 2000, cache_read_input_tokens: 40000, output_tokens: 1 } } }],
  ['content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } }],
  ['ping', { type: 'ping' }],
  ['content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'héllo ✓ 🎉 data: {"usage":{"output_tokens":7}}\n\n' } }],
  ['content_block_stop', { type: 'content_block_stop', index: 0 }],
  ['message_delta', { type: 'message_delta', delta: { stop_reason: 'end_turn' }, usage: { output_tokens: 350 } }],
  ['message_stop', { type: 'message_stop' }],
);
const ANTHROPIC_EXPECTED = usage('claude-sonnet-4-5-20250929', 12, 350, 40000, 2000);

test('an Anthropic stream gives the start usage with the last output count', () => {
  assert.deepEqual(meter('anthropic', SSE, [ANTHROPIC_STREAM]), ANTHROPIC_EXPECTED);
});

test('an Anthropic stream split at every byte offset, or byte by byte, gives the same result', () => {
  for (const text of [ANTHROPIC_STREAM, ANTHROPIC_STREAM.replace(/\n/g, '\r\n'), ANTHROPIC_STREAM.replace(/\n/g, '\r')]) {
    const bytes = Buffer.from(text);
    for (let i = 0; i <= bytes.length; i++) {
      assert.deepEqual(meter('anthropic', SSE, [bytes.subarray(0, i), bytes.subarray(i)]), ANTHROPIC_EXPECTED, `split at ${i}`);
    }
    const single = [...bytes].map((b) => Buffer.from([b]));
    assert.deepEqual(meter('anthropic', SSE, single), ANTHROPIC_EXPECTED, 'byte by byte');
  }
});

test('a UTF-8 character split between chunks is decoded whole', () => {
  const model = 'modèle-✓-🎉';
  const bytes = Buffer.from(sse(['message_start', { type: 'message_start', message: { model, usage: { input_tokens: 3 } } }]));
  for (let i = 0; i <= bytes.length; i++) {
    assert.deepEqual(meter('anthropic', SSE, [bytes.subarray(0, i), bytes.subarray(i)]), usage(model, 3, 0), `split at ${i}`);
  }
});

test('Anthropic deltas replace the counts they carry; null ones are not reports', () => {
  const body = sse(
    ['message_start', { type: 'message_start', message: { model: 'claude-opus-4-5', usage: { input_tokens: 10, cache_creation_input_tokens: 5, cache_read_input_tokens: 7, output_tokens: 1 } } }],
    ['message_delta', { type: 'message_delta', usage: { output_tokens: 40 } }],
    ['message_delta', { type: 'message_delta', usage: { input_tokens: 900, cache_read_input_tokens: null, cache_creation_input_tokens: 30, output_tokens: 80 } }],
    ['message_delta', { type: 'message_delta', usage: { input_tokens: null, cache_read_input_tokens: null, cache_creation_input_tokens: null, output_tokens: 80 } }],
  );
  assert.deepEqual(meter('anthropic', SSE, [body]), usage('claude-opus-4-5', 900, 80, 7, 30));
});

test('SSE details: multi-line data, comments, the type inside data, no final blank line, a BOM', () => {
  const body =
    '\uFEFFdata: {"type":"message_start",\ndata: "message":{"model":"m","usage":{"input_tokens":4}}}\n\n' +
    ': keep-alive\n\n' +
    'data: {"type":"message_delta","usage":{"output_tokens":9}}';
  assert.deepEqual(meter('anthropic', SSE, [body]), usage('m', 4, 9));
  assert.deepEqual(meter('anthropic', 'Text/Event-Stream; charset=utf-8', [body]), usage('m', 4, 9));
  const crlf = Buffer.from(body.replace(/\n/g, '\r\n'));
  for (let i = 0; i <= crlf.length; i++) {
    assert.deepEqual(meter('anthropic', SSE, [crlf.subarray(0, i), crlf.subarray(i)]), usage('m', 4, 9), `CRLF split at ${i}`);
  }
});

test('an Anthropic JSON body', () => {
  const body = { id: 'msg_1', type: 'message', model: 'claude-haiku-4-5', content: [{ type: 'text', text: 'ok' }], usage: { input_tokens: 20, output_tokens: 5, cache_read_input_tokens: 100, cache_creation_input_tokens: 50 } };
  const bytes = Buffer.from(JSON.stringify(body));
  assert.deepEqual(meter('anthropic', JSON_TYPE, [bytes.subarray(0, 17), bytes.subarray(17)]), usage('claude-haiku-4-5', 20, 5, 100, 50));
  assert.deepEqual(meter('anthropic', 'application/json; charset=utf-8', [bytes]), usage('claude-haiku-4-5', 20, 5, 100, 50));
  assert.deepEqual(meter('anthropic', JSON_TYPE, ['{"type":"error","error":{"type":"overloaded_error"}}']), usage(null, 0, 0));
});

const RESPONSES_USAGE = { input_tokens: 5000, input_tokens_details: { cached_tokens: 4096 }, output_tokens: 300, output_tokens_details: { reasoning_tokens: 128 }, total_tokens: 5300 };

test('an OpenAI Responses JSON body: cached tokens are split out of the input', () => {
  const body = { id: 'resp_1', object: 'response', status: 'completed', model: 'gpt-5-codex', output: [], usage: RESPONSES_USAGE };
  assert.deepEqual(meter('openai', JSON_TYPE, [JSON.stringify(body)]), usage('gpt-5-codex', 904, 300, 4096, 0));
});

test('an OpenAI Responses stream: usage from response.completed, incomplete or failed', () => {
  const created = ['response.created', { type: 'response.created', response: { id: 'r', object: 'response', status: 'in_progress', model: 'gpt-5-codex', usage: null } }] as [string, unknown];
  const delta = ['response.output_text.delta', { type: 'response.output_text.delta', delta: 'hi' }] as [string, unknown];
  for (const type of ['response.completed', 'response.incomplete', 'response.failed']) {
    const body = sse(created, delta, [type, { type, response: { id: 'r', model: 'gpt-5-codex-2025-09-15', usage: RESPONSES_USAGE } }]);
    const bytes = Buffer.from(body);
    for (let i = 0; i <= bytes.length; i += 7) {
      assert.deepEqual(meter('openai', SSE, [bytes.subarray(0, i), bytes.subarray(i)]), usage('gpt-5-codex-2025-09-15', 904, 300, 4096, 0), `${type} split at ${i}`);
    }
  }
  assert.deepEqual(meter('openai', SSE, [sse(created, delta)]), usage('gpt-5-codex', 0, 0), 'cut before the end: the model is known');
  const inProgress = sse(['response.in_progress', { type: 'response.in_progress', response: { model: 'gpt-5', usage: RESPONSES_USAGE } }]);
  assert.deepEqual(meter('openai', SSE, [inProgress]), usage('gpt-5', 0, 0), 'only the final events carry usage');
});

test('OpenAI Chat Completions, JSON and streamed; [DONE] ends the stream', () => {
  const u = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120, prompt_tokens_details: { cached_tokens: 64 } };
  const json = { id: 'c1', object: 'chat.completion', model: 'gpt-4.1-2025-04-14', choices: [], usage: u };
  assert.deepEqual(meter('openai', JSON_TYPE, [JSON.stringify(json)]), usage('gpt-4.1-2025-04-14', 36, 20, 64, 0));
  const stream = sse(
    [null, { id: 'c1', object: 'chat.completion.chunk', model: 'gpt-4.1-2025-04-14', choices: [{ delta: { content: 'hi' } }], usage: null }],
    [null, { id: 'c1', object: 'chat.completion.chunk', model: 'gpt-4.1-2025-04-14', choices: [], usage: u }],
    [null, '[DONE]'],
    [null, { model: 'other', usage: { prompt_tokens: 1, completion_tokens: 1 } }],
  );
  assert.deepEqual(meter('openai', SSE, [stream]), usage('gpt-4.1-2025-04-14', 36, 20, 64, 0));
  assert.deepEqual(meter('openai', SSE, [sse([null, { model: 'gpt-4.1', choices: [], usage: { prompt_tokens: 8, completion_tokens: 2 } }])]), usage('gpt-4.1', 8, 2));
});

test('without a content type the format is sniffed', () => {
  assert.deepEqual(meter('anthropic', undefined, ['  \n', ANTHROPIC_STREAM]), ANTHROPIC_EXPECTED);
  assert.deepEqual(meter('openai', undefined, ['\n', '{"model":"gpt-5","usage":{"input_tokens":3,"output_tokens":4}}']), usage('gpt-5', 3, 4));
  assert.deepEqual(meter('openai', undefined, []), usage(null, 0, 0));
});

test('bad numbers count as 0', () => {
  const cases: [string, number][] = [['-5', 0], ['1e999', 0], ['-1e999', 0], ['"12"', 0], ['true', 0], ['{}', 0], ['[3]', 0], ['1e12', 0], ['999999999999', 999999999999], ['7.9', 7]];
  for (const [raw, want] of cases) {
    const body = `{"model":"m","usage":{"input_tokens":${raw},"output_tokens":${raw},"cache_read_input_tokens":${raw},"cache_creation_input_tokens":${raw}}}`;
    assert.deepEqual(meter('anthropic', JSON_TYPE, [body]), usage('m', want, want, want, want), raw);
  }
  const delta = sse(
    ['message_start', { type: 'message_start', message: { model: 'm', usage: { input_tokens: 10, output_tokens: 1 } } }],
    ['message_delta', { type: 'message_delta', usage: { output_tokens: -3 } }],
  );
  assert.deepEqual(meter('anthropic', SSE, [delta]), usage('m', 10, 0));
  const openai = '{"model":"m","usage":{"input_tokens":10,"output_tokens":1e999,"input_tokens_details":{"cached_tokens":50}}}';
  assert.deepEqual(meter('openai', JSON_TYPE, [openai]), usage('m', 0, 0, 10, 0), 'cached tokens are at most the input');
});

test('non-JSON data, non-object JSON and inherited names are skipped', () => {
  const body =
    'event: message_start\ndata: not json {\n\n' +
    'event: message_start\ndata: [1,2]\n\n' +
    'event: message_start\ndata: {"type":"message_start","message":"m"}\n\n' +
    sse(['message_delta', { type: 'message_delta', usage: { output_tokens: 3 } }]);
  assert.deepEqual(meter('anthropic', SSE, [body]), usage(null, 0, 3));
  assert.deepEqual(meter('anthropic', JSON_TYPE, ['{"__proto__":{"model":"m","usage":{"input_tokens":5}}}']), usage(null, 0, 0));
  assert.deepEqual(meter('anthropic', JSON_TYPE, ['[{"model":"m"}]']), usage(null, 0, 0));
  assert.deepEqual(meter('openai', JSON_TYPE, ['{"model":"m","usage":']), usage(null, 0, 0), 'a cut body');
  assert.deepEqual(meter('anthropic', JSON_TYPE, ['{"model":42,"usage":null}']), usage(null, 0, 0));
});

test('model names are cut to 200 characters', () => {
  const long = 'm'.repeat(199) + '🎉' + 'x'.repeat(50);
  assert.equal(meter('openai', JSON_TYPE, [JSON.stringify({ model: long })]).model, 'm'.repeat(199));
  assert.equal(meter('openai', JSON_TYPE, [JSON.stringify({ model: 'y'.repeat(500) })]).model, 'y'.repeat(200));
});

test('a JSON body over maxBytes reports zeros; one at the limit is read', () => {
  const body = JSON.stringify({ model: 'm', usage: { input_tokens: 1, output_tokens: 2 } });
  assert.deepEqual(meter('anthropic', JSON_TYPE, [body], body.length), usage('m', 1, 2));
  assert.deepEqual(meter('anthropic', JSON_TYPE, [body.slice(0, 10), body.slice(10)], body.length - 1), usage(null, 0, 0));
});

test('an SSE line over 1 MiB is dropped with its event, without being held', () => {
  const m = new UsageMeter('anthropic', SSE);
  const held = (): number => (m as unknown as { lineSize: number }).lineSize;
  m.push(Buffer.from(sse(['message_start', { type: 'message_start', message: { model: 'm', usage: { input_tokens: 5, output_tokens: 1 } } }])));
  m.push(Buffer.from('event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":999}}\ndata: "'));
  const pad = Buffer.alloc(64 * 1024, 'a');
  for (let i = 0; i < 64; i++) {
    m.push(pad);
    assert.ok(held() <= 1024 * 1024, `holds ${held()} bytes`);
  }
  m.push(Buffer.from('"}\n\n'));
  m.push(Buffer.from(sse(['message_delta', { type: 'message_delta', usage: { input_tokens: 6 } }])));
  assert.deepEqual(m.end(), usage('m', 6, 1), 'the event that lost a line is not read; the next one is');
});

test('an SSE event whose data lines add up to over 1 MiB is dropped', () => {
  // Valid JSON once joined: the lines are elements of an array.
  const lines = `data: {"type":"message_delta","usage":{"output_tokens":999},"pad":[\n${`data: "${'b'.repeat(300 * 1024)}",\n`.repeat(4)}data: 0]}\n`;
  const small = lines.replace(/b{300}/g, 'b');
  assert.deepEqual(meter('anthropic', SSE, [`${small}\n`]), usage(null, 0, 999), 'the same event, small, is read');
  const body = `${lines}\n` + sse(['message_delta', { type: 'message_delta', usage: { input_tokens: 7 } }]);
  assert.deepEqual(meter('anthropic', SSE, [body]), usage(null, 7, 0));
  assert.deepEqual(meter('anthropic', SSE, [lines]), usage(null, 0, 0), 'nor counted at the end');
});

test('a chunk the caller reuses after push does not change what was read', () => {
  const m = new UsageMeter('anthropic', SSE);
  const chunk = Buffer.from('data: {"type":"message_delta","usage":{"output_tokens":12');
  m.push(chunk);
  chunk.fill(0x39);
  m.push(Buffer.from('}}\n\n'));
  assert.deepEqual(m.end(), usage(null, 0, 12));
});

test('end() is final', () => {
  const m = new UsageMeter('anthropic', SSE);
  m.push(Buffer.from(ANTHROPIC_STREAM));
  assert.deepEqual(m.end(), ANTHROPIC_EXPECTED);
  m.push(Buffer.from(sse(['message_delta', { type: 'message_delta', usage: { output_tokens: 1 } }])));
  assert.deepEqual(m.end(), ANTHROPIC_EXPECTED);
});
