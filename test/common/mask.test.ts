import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Masker } from '../../src/common/mask.js';

test('secret values are replaced wherever they appear', () => {
  const m = new Masker(['hunter22', 'x']);
  assert.equal(m.mask('pw=hunter22 and hunter22'), 'pw=*** and ***');
  assert.equal(m.mask('x marks the spot'), 'x marks the spot', 'values under 4 characters are not masked');
});

test('well-known token shapes are masked without being declared', () => {
  const m = new Masker([]);
  const cases = [
    'sk-ant-api03-abcdefghijklmnop',
    'sk-abcdefghijklmnopqrstuvwx',
    'ghp_abcdefghijklmnopqrstuvwxyz0123',
    'github_pat_11ABCDEFG0123456789_abcdef',
    'AKIAIOSFODNN7EXAMPLE',
    'AIzaSyA-1234567890abcdefghijklmnopqrstu',
    'xoxb-1234567890-abcdefghij',
  ];
  for (const token of cases) assert.equal(m.mask(`token: ${token} end`), 'token: *** end', token);
});
