import assert from 'node:assert/strict';
import { test } from 'node:test';
import { END_MARKER, EndWatch, scratchMount } from '../../../src/container/swarm/task.js';

test('the end marker: stripped, and the end is said only while it is the last thing on both streams', async () => {
  let pokes = 0;
  const w = new EndWatch(() => pokes++);
  const seen: string[] = [];
  const to = (b: Buffer) => void seen.push(b.toString());
  const marker = Buffer.from(`${END_MARKER}\n`);
  let ended = false;
  void w.both().then(() => (ended = true));
  // a step that forges the marker, then writes on: not the end
  w.pass(0, marker, to);
  w.pass(1, marker, to);
  await new Promise((r) => setImmediate(r));
  assert.equal(ended, true, 'both streams ended with it: the end, for now');
  w.pass(0, Buffer.from('more output\n'), to);
  let later = false;
  void w.both().then(() => (later = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(later, false, 'output after a marker: not the end');
  // the wrapper's own, the marker in the same frame as the step's last line
  w.pass(0, Buffer.concat([Buffer.from('last line\n'), marker]), to);
  await new Promise((r) => setImmediate(r));
  assert.equal(later, true);
  assert.deepEqual(seen, ['more output\n', 'last line\n'], 'the marker is never passed on');
  assert.equal(pokes, 3);
});

test('a step\'s workspace on a node: a tmpfs volume of its own, writable by any uid, programs runnable, no bigger than the step\'s memory', () => {
  const m = scratchMount('/home/agent/run-workspace', 256 * 1024 ** 2) as { Type: string; Target: string; VolumeOptions: { DriverConfig: { Name: string; Options: Record<string, string> } } };
  assert.equal(m.Type, 'volume');
  assert.equal(m.Target, '/home/agent/run-workspace');
  const { Name, Options } = m.VolumeOptions.DriverConfig;
  assert.equal(Name, 'local');
  assert.equal(Options.type, 'tmpfs');
  const o = Options.o!.split(',');
  assert.ok(o.includes(`size=${256 * 1024 ** 2}`) && o.includes('mode=1777'), Options.o);
  assert.ok(!o.includes('noexec'), 'a workspace holds programs');
  // a tmpfs of size 0 is unbounded: a step with no memory limit still gets a bound
  assert.ok(scratchMount('/x', 0).VolumeOptions !== undefined && JSON.stringify(scratchMount('/x', 0)).includes(`size=${4 * 1024 ** 3}`));
});

test('a swarm step\'s workspace volume is named and labelled: one volume a node keeps, found by its label', () => {
  const m = scratchMount('/home/agent/.runner', 1024, 'runner-x-build-1-scratch1', { 'dev.runner.run-id': 'r1' }) as { Source?: string; VolumeOptions: { Labels: Record<string, string> } };
  assert.equal(m.Source, 'runner-x-build-1-scratch1');
  assert.deepEqual(m.VolumeOptions.Labels, { 'dev.runner.run-id': 'r1', 'dev.runner.scratch': 'true' });
  assert.equal((scratchMount('/x', 1024) as { Source?: string }).Source, undefined, 'without a name: anonymous, gone with its container');
});
