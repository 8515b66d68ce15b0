/**
 * Start a run of a pipeline file (start_run): a pipeline the door offers, by
 * its name or its file, whose real path lies under the door's pipelines
 * folders (folders.ts), loaded and started through the door's holder with the
 * given inputs (an input it does not take is bad_input, said now). An agent
 * task is started by agent-task.ts; runner serve's API triggers its folder's
 * pipelines by name through its queue, which starts them through the same
 * holder (holder.ts).
 */
import { loadPipeline } from '../pipeline/load.js';
import type { StartedBy } from '../run/record.js';
import type { StartDoor } from './door.js';
import { within } from './folders.js';

export async function startPipeline(
  door: StartDoor,
  pipeline: string,
  inputs: Record<string, string | number | boolean>,
  startedBy: StartedBy,
): Promise<{ runId: string; pipeline: string; file: string }> {
  const named = (await door.pipelines()).find((p) => p.name === pipeline && !p.errors.length);
  const real = await within(named ? named.file : pipeline, door.pipelineDirs, 'pipeline file', '--pipelines');
  const loaded = await loadPipeline(real);
  const values = Object.fromEntries(Object.entries(inputs).map(([k, v]) => [k, String(v)]));
  const runId = await door.start(loaded, values, startedBy);
  return { runId, pipeline: loaded.pipeline.name, file: real };
}
