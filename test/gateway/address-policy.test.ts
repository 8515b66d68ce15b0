import assert from 'node:assert/strict';
import { test } from 'node:test';
import { addressProblem, canonicalAddress, embeddedIPv4, parseCidr, parseCidrList } from '../../src/gateway/address-policy.js';

const none = { hostAddresses: [], privateAllowed: [] };

test('loopback, link-local (metadata), unspecified, multicast and reserved are never reached', () => {
  for (const ip of ['127.0.0.1', '127.1.2.3', '0.0.0.0', '0.1.2.3', '169.254.169.254', '224.0.0.1', '239.1.1.1', '240.0.0.1', '255.255.255.255', '::1', '::', 'fe80::1', 'ff02::1', '::ffff:127.0.0.1', '::ffff:169.254.169.254']) {
    assert.match(addressProblem(ip, { hostAddresses: [], privateAllowed: ['0.0.0.0/0', '::/0'] }) ?? '', /loopback|reserved/, ip);
  }
});

test('private and special-purpose ranges are refused unless allowed, and say how to allow them', () => {
  for (const ip of ['10.0.0.5', '172.16.0.1', '172.31.255.255', '192.168.1.1', '100.64.0.1', 'fd00::1', 'fc12::1', '::ffff:10.1.2.3', '64:ff9b::a01:203', '2002:a01:203::1',
    '198.18.0.1', '198.19.255.1', '192.0.0.170', '64:ff9b:1::1']) {
    assert.match(addressProblem(ip, none) ?? '', /a private or special-purpose address, not the internet \(allow its range with --egress-private/, ip);
  }
  assert.match(addressProblem('2001:0:4136:e378:8000:63bf:3fff:fdd2', none) ?? '', /reserved/, 'Teredo hides an IPv4 address: never');
  assert.equal(addressProblem('10.20.3.4', { hostAddresses: [], privateAllowed: ['10.20.0.0/16'] }), undefined);
  assert.match(addressProblem('10.21.3.4', { hostAddresses: [], privateAllowed: ['10.20.0.0/16'] }) ?? '', /private/);
  assert.equal(addressProblem('fd00::7', { hostAddresses: [], privateAllowed: ['fd00::/8'] }), undefined);
  for (const ip of ['93.184.216.34', '172.32.0.1', '100.128.0.1', '2606:4700::1', '8.8.8.8', '203.0.113.80', '2001:db8::1']) assert.equal(addressProblem(ip, none), undefined, ip);
});

test("this machine's addresses are refused even inside an allowed private range, in any spelling", () => {
  const policy = { hostAddresses: ['172.30.0.1', '172.17.0.1', '192.0.2.2', 'fd00::2'], privateAllowed: ['172.16.0.0/12', 'fd00::/8'] };
  for (const ip of ['172.30.0.1', '172.17.0.1', '::ffff:172.17.0.1', '192.0.2.2', 'fd00::2', 'fd00:0:0:0:0:0:0:2', '[fd00::2]']) {
    assert.equal(addressProblem(ip, policy), ip.startsWith('::ffff') ? 'an address of this machine (as ::ffff:172.17.0.1)' : 'an address of this machine', ip);
  }
  assert.equal(addressProblem('172.30.0.2', policy), undefined, 'a neighbour on the same network is not this machine');
});

test('IPv6 forms that carry an IPv4 address are read as it', () => {
  assert.equal(embeddedIPv4('::ffff:10.1.2.3'), '10.1.2.3');
  assert.equal(embeddedIPv4('::ffff:a01:203'), '10.1.2.3');
  assert.equal(embeddedIPv4('64:ff9b::7f00:1'), '127.0.0.1');
  assert.equal(embeddedIPv4('2002:7f00:1::'), '127.0.0.1');
  assert.equal(embeddedIPv4('2001:db8::1'), undefined);
  assert.equal(canonicalAddress('::FFFF:1.2.3.4'), '1.2.3.4');
  assert.equal(canonicalAddress('fd00:0::2'), 'fd00:0:0:0:0:0:0:2');
});

test('--egress-private takes CIDRs and says what is wrong with anything else', () => {
  assert.deepEqual(parseCidrList('10.0.0.0/8, fd00::/8'), ['10.0.0.0/8', 'fd00::/8']);
  assert.deepEqual(parseCidrList(undefined), []);
  assert.match(parseCidrList('10.0.0.0') as string, /"10\.0\.0\.0" is not a CIDR range: write an address and a prefix length, like 10\.20\.0\.0\/16/);
  assert.match(parseCidrList('mirror.corp/24') as string, /not a CIDR/);
  assert.match(parseCidr('10.0.0.0/33') as string, /prefix longer than an IPv4 address/);
});

test("a network this machine is on is not the internet, whatever its range (this machine's LAN here is 192.0.2.0/24)", () => {
  const policy = { hostAddresses: ['192.0.2.2'], privateAllowed: [], hostNetworks: ['192.0.2.0/24', '172.17.0.0/16', 'fd00::/64'] };
  for (const ip of ['192.0.2.1', '192.0.2.200', 'fd00::9']) assert.match(addressProblem(ip, policy) ?? '', /on a network this machine is on \(its LAN or a bridge\), not the internet \(allow its range with --egress-private/, ip);
  assert.equal(addressProblem('203.0.113.80', policy), undefined, 'a documentation range reached through the default route is as the internet is here');
  assert.equal(addressProblem('192.0.2.1', { ...policy, privateAllowed: ['192.0.2.0/24'] }), undefined);
  assert.equal(addressProblem('192.0.2.2', { ...policy, privateAllowed: ['192.0.2.0/24'] }), 'an address of this machine');
});
