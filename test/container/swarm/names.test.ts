import assert from 'node:assert/strict';
import { test } from 'node:test';
import { nameTaken, overlayHiccup, overlayName, serviceName } from '../../../src/container/swarm/names.js';

test('a service name the swarm takes: a DNS label, unique when cut', () => {
  assert.equal(serviceName('runner-20261123-143547-attjpp-build.1'), 'runner-20261123-143547-attjpp-build-1');
  const long = serviceName(`runner-20261123-143547-attjpp-${'x'.repeat(80)}.1`);
  assert.equal(long.length, 63);
  assert.notEqual(long, serviceName(`runner-20261123-143547-attjpp-${'x'.repeat(80)}.2`));
  assert.match(serviceName('runner-x-a_b[0].2'), /^[A-Za-z0-9-]+$/);
  assert.equal(serviceName(`runner-${'y'.repeat(80)}-relay`, 59).length, 59, 'room left for a suffix (a relay network adds -net)');
});

test('a name held is told apart from other refusals, in the engine\'s words and the swarm\'s', () => {
  assert.ok(nameTaken(new Error('(HTTP code 500) server error - rpc error: code = Unknown desc = name conflicts with an existing object')));
  assert.ok(nameTaken(new Error('(HTTP code 409) unexpected - network with name runner-swarm already exists')));
  assert.ok(!nameTaken(new Error('(HTTP code 500) server error - context deadline exceeded')));
});

test("an overlay's name: one per try, a DNS label with room for -net", () => {
  assert.equal(overlayName('runner-r1-build.1-gw', 1), 'runner-r1-build-1-gw');
  assert.equal(overlayName('runner-r1-build.1-gw', 2), 'runner-r1-build-1-gw2');
  assert.ok(overlayName(`runner-${'x'.repeat(80)}-gw`, 3).length <= 59);
});

test("a busy manager's hiccups are told apart from other failures", () => {
  assert.equal(overlayHiccup(new Error('attaching to network failed: context deadline exceeded')), true);
  assert.equal(overlayHiccup(new Error('rpc error: name conflicts with an existing object')), true);
  assert.equal(overlayHiccup(new Error('image runner/gateway:latest is missing')), false);
});
