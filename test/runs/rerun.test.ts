import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RunnerError } from '../../src/common/errors.js';
import { planRerun } from '../../src/runs/rerun.js';

const served = [
  { name: 'digest', file: '/srv/pipelines/digest.yaml' },
  { name: null, file: '/srv/pipelines/broken.yaml' },
];
const old = { runId: 'r1', pipeline: 'digest', pipelineFile: '/srv/pipelines/digest.yaml', inputs: { topic: 'x', depth: '2' } };

test('a rerun is the same pipeline file with the inputs the old run was started with', () => {
  assert.deepEqual(planRerun(old, served), { pipeline: 'digest', inputs: { topic: 'x', depth: '2' } });
  const { inputs: _, ...older } = old; // a record of an older runner has no inputs: the defaults
  assert.deepEqual(planRerun(older, served), { pipeline: 'digest', inputs: {} });
});

test('a pipeline this server does not run, or runs from another file, is unknown; a run without a pipeline a bad request', () => {
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (err) {
      return [(err as RunnerError).code, (err as Error).message];
    }
    return undefined;
  };
  assert.deepEqual(code(() => planRerun({ ...old, pipeline: 'gone' }, served))?.[0], 'pipeline_unknown');
  const moved = code(() => planRerun({ ...old, pipelineFile: '/home/a/digest.yaml' }, served));
  assert.equal(moved?.[0], 'pipeline_unknown');
  assert.match(String(moved?.[1]), /was of the pipeline file \/home\/a\/digest\.yaml; this server runs digest from \/srv\/pipelines\/digest\.yaml/);
  assert.equal(code(() => planRerun({ ...old, pipelineFile: '' }, served))?.[0], 'bad_request');
});
