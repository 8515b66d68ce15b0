import assert from 'node:assert/strict';
import { test } from 'node:test';
import { commitMessage } from '../../src/run/commit-message.js';

test('subject from the summary, trailers from the run', () => {
  const m = commitMessage({ runId: 'r1', stepId: 'design', actor: 'finn', status: 'completed', exitCode: 0, summary: '\n  Wrote DESIGN.md\nmore' });
  assert.equal(m, 'step/design (finn): Wrote DESIGN.md\n\nRunner-Run: r1\nRunner-Step: design\nRunner-Status: completed\n');
});

test('without a summary the status stands in; long summaries are cut', () => {
  const failed = commitMessage({ runId: 'r1', stepId: 't', actor: 'img:1', status: 'failed', exitCode: 2 });
  assert.match(failed, /^step\/t \(img:1\): failed \(exit 2\)\n/);
  assert.match(failed, /Runner-Status: failed \(exit 2\)/);
  const long = commitMessage({ runId: 'r', stepId: 's', actor: 'a', status: 'timed_out', exitCode: 137, summary: 'x'.repeat(200) });
  assert.equal(long.split('\n')[0]!.length, 'step/s (a): '.length + 72);
  assert.match(long, /Runner-Status: timed out/);
});

test('a summary with control characters makes a subject without them', () => {
  const m = commitMessage({ runId: 'r', stepId: 's', actor: 'a', status: 'completed', exitCode: 0, summary: '\x1b]0;title\x07done\rrunner: forged' });
  const subject = m.split('\n')[0]!;
  assert.doesNotMatch(m, /[\x00-\x09\x0b-\x1f\x7f]/);
  assert.equal(subject, 'step/s (a): \\x1b]0;title\\x07done\\rrunner: forged');
});
