import assert from 'node:assert/strict';
import { test } from 'node:test';
import { inSubnet } from '../../src/gateway/address.js';
import { forbiddenAddress } from '../../src/gateway/egress.js';

test('an allowed name that resolves to this machine, link-local (metadata) or nothing is not followed', () => {
  for (const ip of ['127.0.0.1', '127.1.2.3', '0.0.0.0', '169.254.169.254', '::1', '::', 'fe80::1', '::ffff:127.0.0.1', '224.0.0.1']) assert.ok(forbiddenAddress(ip), ip);
  for (const ip of ['93.184.216.34', '10.0.0.5', '172.20.0.2', '192.168.1.1', '2001:db8::1']) assert.ok(!forbiddenAddress(ip), ip);
});

test("only the step's own network may talk to its gateway", () => {
  assert.ok(inSubnet('172.30.0.0/16', '172.30.5.9'));
  assert.ok(inSubnet('172.30.0.0/16', '::ffff:172.30.5.9'));
  assert.ok(!inSubnet('172.30.0.0/16', '172.17.0.1'));
  assert.ok(!inSubnet('172.30.0.0/16', 'fe80::1'));
  assert.ok(!inSubnet('172.30.0.0/16', undefined));
});
