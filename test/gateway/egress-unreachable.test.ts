import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Unreachable } from '../../src/gateway/egress.js';

test('an allowed host that does not answer is said once per host and port, by its error code, and the said are bounded', () => {
  const said: string[] = [];
  const u = new Unreachable((host, port, reason) => said.push(`${host}:${port} ${reason}`));
  const refused = Object.assign(new Error('connect ECONNREFUSED 10.0.0.2:9'), { code: 'ECONNREFUSED' });
  u.note('a.example', 9, refused);
  u.note('a.example', 9, refused);
  u.note('a.example', 443, Object.assign(new Error('getaddrinfo ENOTFOUND a.example'), { code: 'ENOTFOUND' }));
  u.note('b.example', 443, new Error('socket hang up'));
  assert.deepEqual(said, ['a.example:9 ECONNREFUSED', 'a.example:443 ENOTFOUND', 'b.example:443 socket hang up']);
  for (let i = 0; i < 1000; i++) u.note(`h${i}.example`, 443, refused);
  assert.ok(said.length < 300, `bounded: ${said.length}`);
});
