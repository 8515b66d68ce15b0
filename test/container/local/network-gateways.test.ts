/** The addresses this machine has on the engine's networks: the IPAM config's gateways, else a bridge's interface address. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { firstAddress, networkGatewaysOf } from '../../../src/container/local/network-gateways.js';

const v4 = (address: string) => ({ address, family: 'IPv4' as const, netmask: '255.255.0.0', mac: '', internal: false, cidr: null });

test('the gateways the engine names; a bridge whose config names none (the default bridge on some machines) gets its interface address', () => {
  const networks = [
    { Id: 'a'.repeat(64), Driver: 'bridge', IPAM: { Config: [{ Subnet: '172.17.0.0/16' }] }, Options: { 'com.docker.network.bridge.name': 'docker0' } },
    { Id: 'b'.repeat(64), Driver: 'bridge', IPAM: { Config: [{ Subnet: '10.5.0.0/24', Gateway: '10.5.0.1' }] } },
    { Id: 'c1234567890abcdef', Driver: 'bridge', IPAM: { Config: [{ Subnet: '10.6.0.0/24' }] } },
    { Id: 'd'.repeat(64), Driver: 'overlay', IPAM: { Config: [{ Subnet: '10.7.0.0/24' }] } },
    { Id: 'e'.repeat(64), Driver: 'bridge', IPAM: { Config: [{ Subnet: '10.8.0.0/24' }] }, Options: { 'com.docker.network.bridge.name': 'gone0' } },
  ];
  const v6 = { address: 'fe80::1', family: 'IPv6' as const, netmask: 'ffff:ffff:ffff:ffff::', mac: '', internal: false, cidr: null, scopeid: 0 };
  const interfaces = { docker0: [v4('172.17.0.1'), v6], 'br-c1234567890a': [v4('10.6.0.1')] };
  assert.deepEqual(networkGatewaysOf(networks, interfaces), ['172.17.0.1', '10.5.0.1', '10.6.0.1', '10.8.0.1']);
  // docker0 with no container attached is not in Node's list: the subnet's first address
  assert.deepEqual(networkGatewaysOf([networks[0]!], {}), ['172.17.0.1']);
});

test('firstAddress: the first host address of a subnet; nothing for what is not one', () => {
  assert.equal(firstAddress('172.17.0.0/16'), '172.17.0.1');
  assert.equal(firstAddress('10.5.3.0/24'), '10.5.3.1');
  assert.equal(firstAddress('192.168.7.130/25'), '192.168.7.129');
  assert.equal(firstAddress('fd00::/64'), undefined);
  assert.equal(firstAddress(undefined), undefined);
  assert.equal(firstAddress('10.0.0.0/32'), undefined);
});
