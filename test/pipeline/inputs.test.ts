/** A run's inputs: given values checked against the pipeline's inputs:, defaults filled in. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MAX_INPUT_BYTES, parseInputFlags, resolveInputs } from '../../src/pipeline/inputs.js';

const p = { name: 'digest', inputs: { topic: { description: 'what the digest is about' }, days: { default: '7' } } };

test('given values win, the rest take their defaults', () => {
  assert.deepEqual(resolveInputs(p, { topic: 'rust' }), { topic: 'rust', days: '7' });
  assert.deepEqual(resolveInputs(p, { topic: 'rust', days: '30' }), { topic: 'rust', days: '30' });
  assert.deepEqual(resolveInputs({ name: 'x' }, {}), {});
});

test('every problem at once: a required input missing, an unknown name with a hint, a value too long', () => {
  assert.throws(() => resolveInputs(p, {}), { code: 'bad_input', message: 'input topic is required (what the digest is about): give it a value' });
  assert.throws(
    () => resolveInputs(p, { topik: 'x', days: 'x'.repeat(MAX_INPUT_BYTES + 1) }),
    (err: Error) =>
      /no input "topik" \(did you mean "topic"\?\); its inputs: topic, days/.test(err.message) &&
      /input days is \d+ bytes; at most/.test(err.message) &&
      /input topic is required/.test(err.message),
  );
  assert.throws(() => resolveInputs({ name: 'x' }, { a: '1' }), /pipeline x takes no inputs \(got "a"\)/);
  const own = JSON.parse('{"topic": "t", "__proto__": "x"}') as Record<string, string>; // an own key, as a JSON body gives it
  assert.throws(() => resolveInputs(p, own), /no input "__proto__"/);
});

test('NAME=VALUE flags: the first = splits, a value may be empty or hold =', () => {
  assert.deepEqual(parseInputFlags(['topic=a=b', 'days=']), { topic: 'a=b', days: '' });
  assert.throws(() => parseInputFlags(['=x']), /--input takes NAME=VALUE, got "=x"/);
  assert.throws(() => parseInputFlags(['topic']), /NAME=VALUE/);
  assert.throws(() => parseInputFlags(['a=1', 'a=2']), /--input a is given twice/);
  assert.deepEqual(Object.keys(parseInputFlags(['__proto__=x'])), ['__proto__'], 'an odd name is a plain key, not a prototype');
});

test('a NUL byte in a value is refused before anything starts', () => {
  assert.throws(() => resolveInputs(p, { topic: 'a\0b' }), { code: 'bad_input', message: /input topic holds a NUL byte/ });
});
