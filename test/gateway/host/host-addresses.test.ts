import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { addressesFromIfInet6, attachedNetworksFromIpv6Route, attachedNetworksFromRoute, localAddressesFromFibTrie } from '../../../src/gateway/host/host-addresses.js';

const FIB = `Main:
  +-- 0.0.0.0/0 3 0 4
     +-- 127.0.0.0/8 2 0 2
        +-- 127.0.0.0/31 1 0 0
           |-- 127.0.0.0
              /8 host LOCAL
           |-- 127.0.0.1
              /32 host LOCAL
        |-- 127.255.255.255
           /32 link BROADCAST
     +-- 172.17.0.0/16 2 0 2
           |-- 172.17.0.0
              /16 link UNICAST
           |-- 172.17.0.1
              /32 host LOCAL
     |-- 192.0.2.2
        /32 host LOCAL
`;

test("this machine's IPv4 addresses from the kernel's table, bridges without carrier included", () => {
  assert.deepEqual(localAddressesFromFibTrie(FIB).sort(), ['127.0.0.1', '172.17.0.1', '192.0.2.2']);
  assert.deepEqual(localAddressesFromFibTrie(''), []);
});

test('IPv6 addresses from if_inet6', () => {
  const text = '00000000000000000000000000000001 01 80 10 80       lo\nfd000000000000000000000000000002 04 40 00 80     eth0\n';
  assert.deepEqual(addressesFromIfInet6(text), ['0:0:0:0:0:0:0:1', 'fd00:0:0:0:0:0:0:2']);
});

test("on this machine, docker0's address is found (it is there when no container is)", () => {
  const found = localAddressesFromFibTrie(readFileSync('/proc/net/fib_trie', 'utf8'));
  assert.ok(found.includes('127.0.0.1'), found.join(' '));
});

test('the networks this machine is directly on, from its routing tables; not the default route, not lo', () => {
  const route = `Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t010200C0\t0003\t0\t0\t0\t00000000\t0\t0\t0
docker0\t000011AC\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0
eth0\t000200C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
tun0\t0000000A\t0101A8C0\t0003\t0\t0\t0\t000000FF\t0\t0\t0
`;
  assert.deepEqual(attachedNetworksFromRoute(route).sort(), ['172.17.0.0/16', '192.0.2.0/24']);
  const v6 = `fd000000000000000000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000000000000000000000000000001 00000400 00000002 00000000 00000003     eth0
00000000000000000000000000000001 80 00000000000000000000000000000000 00 00000000000000000000000000000000 00000000 00000002 00000000 80200001       lo
`;
  assert.deepEqual(attachedNetworksFromIpv6Route(v6), ['fd00:0:0:0:0:0:0:0/64']);
});
