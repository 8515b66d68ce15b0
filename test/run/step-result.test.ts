import assert from 'node:assert/strict';
import { test } from 'node:test';
import { classify, describeLimit, describeStatus } from '../../src/run/step-result.js';

test('the first cause decides the status', () => {
  const cases: Array<[Parameters<typeof classify>, string]> = [
    [['exit', 0, false], 'completed'],
    [['exit', 2, false], 'failed'],
    [['exit', 137, true], 'oom'],
    [['timeout', 137, false], 'timed_out'],
    [['timeout', 137, true], 'timed_out'],
    [['canceled', 143, false], 'canceled'],
  ];
  for (const [args, want] of cases) assert.equal(classify(...args), want, JSON.stringify(args));
  assert.equal(describeStatus('failed', 2), 'failed (exit 2)');
  assert.equal(describeStatus('timed_out', 137), 'timed out');
});

test('a limit that fired is said with its bound and the setting that raises it; under gVisor, the pids cap as the sandbox holds it', () => {
  const plan = { memoryBytes: 512 * 1024 ** 2, timeoutMs: 120_000, pids: 256, fileSizeBytes: 1024 ** 3, isolation: 'runc' as const };
  assert.match(describeLimit('memory', plan), /^oom: killed at its memory limit of .*\(raise resources\.memory\)$/);
  assert.equal(describeLimit('timeout', plan), 'timed out: stopped at its timeout of 120s (raise timeout)');
  assert.equal(describeLimit('pids', plan), 'pids limit reached: forks were refused at 256 processes (raise resources.pids)');
  assert.equal(describeLimit('pids', { ...plan, isolation: 'gvisor' }), 'pids limit reached: the sandbox held 256 processes, its cap, where forks are refused (raise resources.pids)');
  assert.match(describeLimit('file_size', plan), /^file size limit reached: a write past .* was refused \(raise resources\.file_size\)$/);
});

