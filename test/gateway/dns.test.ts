import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nxdomain } from '../../src/gateway/dns.js';

// A query for example.com, type A, recursion desired.
const QUERY = Buffer.from('abcd01000001000000000000076578616d706c6503636f6d0000010001', 'hex');

test('every query is answered NXDOMAIN, with its id and question', () => {
  const a = nxdomain(QUERY)!;
  assert.equal(a.readUInt16BE(0), 0xabcd);
  const flags = a.readUInt16BE(2);
  assert.equal(flags & 0x8000, 0x8000, 'an answer');
  assert.equal(flags & 0x000f, 3, 'NXDOMAIN');
  assert.equal(flags & 0x0100, 0x0100, 'recursion desired, as asked');
  assert.equal(a.readUInt16BE(4), 1);
  assert.equal(a.readUInt16BE(6), 0, 'no answers');
  assert.deepEqual(a.subarray(12), QUERY.subarray(12));
});

test('what is not a query gets nothing', () => {
  assert.equal(nxdomain(Buffer.alloc(5)), undefined);
  const answer = Buffer.from(QUERY);
  answer.writeUInt16BE(0x8180, 2);
  assert.equal(nxdomain(answer), undefined);
  assert.equal(nxdomain(QUERY.subarray(0, 20)), undefined, 'a question cut short');
});
