/**
 * Rerun (POST /api/runs/:id/rerun): which pipeline a run is run again with,
 * and its inputs. The same pipeline file this server runs, with the values the
 * old run was started with (defaults filled in, as its record has them):
 * planRerun is pure; rerunOf checks the run and starts the new one.
 */
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import type { RunRecord, StartedBy } from '../run/record.js';
import { readRun } from '../run/records.js';
import type { Door } from './door.js';
import { showRun } from './show.js';

export interface Rerun {
  pipeline: string;
  inputs: Record<string, string>;
}

export function planRerun(rec: Pick<RunRecord, 'runId' | 'pipeline' | 'pipelineFile' | 'inputs'>, served: ReadonlyArray<{ name: string | null; file: string }>): Rerun {
  if (!rec.pipeline || !rec.pipelineFile) {
    throw new RunnerError('bad_request', `run ${rec.runId} has no pipeline on record (its pipeline was gone before it could start): trigger the pipeline you mean instead`);
  }
  const same = served.find((p) => p.name === rec.pipeline);
  if (!same) throw new RunnerError('pipeline_unknown', `run ${rec.runId} was of pipeline ${rec.pipeline}, which this server does not run (GET /api/pipelines)`);
  if (path.resolve(same.file) !== path.resolve(rec.pipelineFile)) {
    throw new RunnerError(
      'pipeline_unknown',
      `run ${rec.runId} was of the pipeline file ${rec.pipelineFile}; this server runs ${rec.pipeline} from ${same.file}: trigger it there instead (POST /api/pipelines/${rec.pipeline}/runs)`,
    );
  }
  return { pipeline: rec.pipeline, inputs: { ...(rec.inputs ?? {}) } };
}

/** Reruns run `id` through the door's start (its queue): checked as every operation on a run (show.ts), then planned as above. */
export async function rerunOf(
  door: Door,
  id: string,
  served: ReadonlyArray<{ name: string | null; file: string }>,
  start: (pipeline: string, inputs: Record<string, string>, startedBy: StartedBy) => Promise<string | undefined>,
  by: Omit<StartedBy, 'via' | 'rerunOf'>,
): Promise<{ runId: string; pipeline: string; rerunOf: string }> {
  await showRun(door, id);
  const plan = planRerun(await readRun(door.runsDir, id), served); // its record as on disk (a queued run has one)
  const runId = await start(plan.pipeline, plan.inputs, { ...by, via: 'rerun', rerunOf: id });
  if (!runId) throw new RunnerError('pipeline_unknown', `no pipeline ${plan.pipeline} (GET /api/pipelines)`);
  return { runId, pipeline: plan.pipeline, rerunOf: id };
}
