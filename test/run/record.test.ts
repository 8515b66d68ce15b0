import assert from 'node:assert/strict';
import { test } from 'node:test';
import { newRecord, runCost, runListing, type RunRecord } from '../../src/run/record.js';

const usage = (inputTokens: number, outputTokens: number, costUsd: number | null) => ({
  model: 'm',
  inputTokens,
  outputTokens,
  cacheReadTokens: null,
  cacheWriteTokens: null,
  costUsd,
  turns: null,
  sessionId: null,
});
const steps = (...u: Array<ReturnType<typeof usage> | undefined>) => u.map((x) => ({ id: 's', status: 'completed', ...(x ? { usage: x } : {}) })) as unknown as RunRecord['steps'];

test("a run's cost: its agent steps' summed; null without agent steps, or without a price", () => {
  assert.deepEqual(runCost({ steps: steps(usage(100, 10, 0.5), undefined, usage(50, 5, 0.25)) }), { costUsd: 0.75, tokens: { input: 150, output: 15 } });
  assert.deepEqual(runCost({ steps: steps(undefined) }), { costUsd: null, tokens: null });
  assert.deepEqual(runCost({ steps: steps(usage(100, 10, null)) }), { costUsd: null, tokens: { input: 100, output: 10 } });
});

test('the listing carries what started the run and its cost', () => {
  const r = newRecord({ runId: 'r', pipeline: 'p', pipelineFile: '/p.yaml', project: '/proj', workspace: 'git_worktree', status: 'succeeded', startedAt: 't', pid: 1 });
  const plain = runListing(r);
  assert.equal('startedBy' in plain, false);
  assert.deepEqual([plain.costUsd, plain.tokens], [null, null]);
  const rerun = runListing({ ...r, startedBy: { via: 'rerun', rerunOf: 'r0' }, steps: steps(usage(1, 2, 0.01)) });
  assert.deepEqual([rerun.startedBy, rerun.costUsd, rerun.tokens], [{ via: 'rerun', rerunOf: 'r0' }, 0.01, { input: 1, output: 2 }]);
});
