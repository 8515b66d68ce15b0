import assert from 'node:assert/strict';
import { test } from 'node:test';
import type os from 'node:os';
import { addressIn, inSubnet } from '../../src/gateway/address.js';

const ifaces = {
  lo: [{ family: 'IPv4', address: '127.0.0.1' }],
  eth0: [{ family: 'IPv4', address: '172.17.0.5' }],
  eth1: [{ family: 'IPv6', address: 'fe80::1' }, { family: 'IPv4', address: '172.30.4.2' }],
} as unknown as ReturnType<typeof os.networkInterfaces>;

test("the gateway's address on the step's network, never its way out", () => {
  assert.equal(addressIn('172.30.0.0/16', ifaces), '172.30.4.2');
  assert.equal(addressIn('172.17.0.0/16', ifaces), '172.17.0.5');
  assert.equal(addressIn('10.0.0.0/8', ifaces), undefined);
});

test("only the step's own network may talk to its gateway", () => {
  assert.ok(inSubnet('172.30.0.0/16', '172.30.5.9'));
  assert.ok(inSubnet('172.30.0.0/16', '::ffff:172.30.5.9'));
  assert.ok(!inSubnet('172.30.0.0/16', '172.17.0.1'));
  assert.ok(!inSubnet('172.30.0.0/16', 'fe80::1'));
  assert.ok(!inSubnet('172.30.0.0/16', undefined));
});
