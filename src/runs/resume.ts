/**
 * Resume and fork (runner resume / fork, POST /api/runs/:id/resume|fork, MCP
 * resume_run / fork_run, the dashboard): the checks and the plan, one place.
 * What this returns is started by the door: the CLI in the foreground, a
 * server through its holder (holder.ts `continueRun`). The steps a resume or a
 * fork does not run again are said by src/run/continuation.ts.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import { loadPipeline, type LoadedPipeline } from '../pipeline/load.js';
import { forkPlan, resumePlan, type Continuation } from '../run/continuation.js';
import { decisionFor } from '../run/gate.js';
import type { DeliveredBy, RunRecord } from '../run/record.js';
import { runDir } from '../run/records.js';
import { gateWaiterAlive } from '../run/gate-waiter.js';
import { decideGate } from './decide.js';
import type { Door, StartDoor } from './door.js';
import { within } from './folders.js';
import { ranRecord } from './show.js';

export interface ContinueAsk {
  /** a pipeline file to take instead of the one the run ran with (it may differ: said, not refused) */
  pipelineFile?: string;
  /** checks the file a door may run (a server: under its pipelines folders); returns its real path */
  allowed?: (file: string) => Promise<string>;
  by?: DeliveredBy;
}

export interface Prepared {
  loaded: LoadedPipeline;
  continuation: Continuation;
  /** a fork's inputs: the old run's, with the new values over them */
  inputs: Record<string, string>;
}

/** Resume run `id` from its first step that did not complete (or after its approved gate). */
export async function prepareResume(door: Door, id: string, ask: ContinueAsk & { how?: 'resume' | 'approval' }): Promise<Prepared> {
  const rec = await ranRecord(door, id);
  if (rec.status === 'awaiting_approval' && rec.gate && decisionFor(rec.decisions, rec.gate.name)?.decision !== 'approved') {
    throw new RunnerError('not_resumable', `run ${id} waits at gate ${rec.gate.name}: approve it (runner approve ${id}) or reject it (runner reject ${id})`);
  }
  const { carry, from } = resumePlan(rec);
  const loaded = await pipelineFor(door, rec, ask);
  return { loaded, continuation: { kind: 'resume', how: ask.how ?? 'resume', prior: rec, carry, from, ...(ask.by ? { by: ask.by } : {}) }, inputs: { ...(rec.inputs ?? {}) } };
}

/** Fork run `id` from `step`: a new run, its branch from the commit just before that step. */
export async function prepareFork(door: Door, id: string, step: string, ask: ContinueAsk & { inputs?: Record<string, string> }): Promise<Prepared> {
  const rec = await ranRecord(door, id);
  const { carry, startAt } = forkPlan(rec, step);
  const loaded = await pipelineFor(door, rec, ask, true);
  if (!loaded.pipeline.steps.some((s) => s.id === step)) throw new RunnerError('bad_request', `the pipeline ${loaded.file} has no step ${step} to fork from`);
  return {
    loaded,
    continuation: { kind: 'fork', how: 'fork', prior: rec, carry, from: step, startAt, ...(ask.by ? { by: ask.by } : {}) },
    inputs: { ...(rec.inputs ?? {}), ...(ask.inputs ?? {}) },
  };
}

/**
 * The pipeline a continued run runs with: the file it ran with, as it was then
 * (its copy in the run's directory), unless told to take another. A file that
 * changed since is refused, with what changed: a resume on a different plan
 * is asked for, never slipped in. A fork may always take a changed file.
 */
async function pipelineFor(door: Door, rec: RunRecord, ask: ContinueAsk, fork = false): Promise<LoadedPipeline> {
  const file = ask.pipelineFile ?? rec.pipelineFile;
  if (!file) throw new RunnerError('bad_request', `run ${rec.runId} has no pipeline file on record: give one (--pipeline FILE)`);
  const real = ask.allowed ? await ask.allowed(file) : file;
  let loaded: LoadedPipeline;
  try {
    loaded = await loadPipeline(real);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') throw new RunnerError('pipeline_unknown', `the pipeline file ${file} run ${rec.runId} ran with is gone: give one (--pipeline FILE)`);
    throw err;
  }
  if (ask.pipelineFile !== undefined || fork || !rec.pipelineCopy) return loaded;
  const then = await readFile(path.join(runDir(door.runsDir, rec.runId), rec.pipelineCopy), 'utf8').catch(() => undefined);
  if (then !== undefined && then !== loaded.text) {
    throw new RunnerError(
      'pipeline_changed',
      `the pipeline file ${file} changed since run ${rec.runId} ran with it:\n${lineDiff(then, loaded.text ?? '')}\nto resume with the file as it is now, say so: runner resume ${rec.runId} --pipeline ${file}`,
    );
  }
  return loaded;
}

/** The lines that differ, as `- old` / `+ new`, at most 20 (a changed region, not a full diff). Pure. */
export function lineDiff(a: string, b: string): string {
  const x = a.split('\n');
  const y = b.split('\n');
  let head = 0;
  while (head < x.length && head < y.length && x[head] === y[head]) head++;
  let tail = 0;
  while (tail < x.length - head && tail < y.length - head && x[x.length - 1 - tail] === y[y.length - 1 - tail]) tail++;
  const out = [...x.slice(head, x.length - tail).map((l) => `- ${l}`), ...y.slice(head, y.length - tail).map((l) => `+ ${l}`)];
  return `  at line ${head + 1}:\n${out.slice(0, 20).map((l) => `  ${l}`).join('\n')}${out.length > 20 ? `\n  … ${out.length - 20} more` : ''}`;
}

/** A door that goes on with runs itself (runner serve, runner mcp): where it takes pipelines from, and its holder. */
export type ContinueDoor = Door & Pick<StartDoor, 'continueRun' | 'pipelineDirs'>;

const underDoor = (door: ContinueDoor) => (file: string) => within(file, door.pipelineDirs, 'pipeline file', '--pipelines');

/**
 * Resume through a server's door (POST /api/runs/:id/resume, MCP resume_run, the dashboard): the run's own
 * pipeline file, which must lie under the server's pipelines folder; `acceptChanged` takes the file as it is now.
 */
export async function resumeRunOf(door: ContinueDoor, id: string, opts: { acceptChanged?: boolean; by: DeliveredBy }): Promise<{ runId: string; from: string }> {
  const rec = await ranRecord(door, id);
  const prepared = await prepareResume(door, id, { allowed: underDoor(door), by: opts.by, ...(opts.acceptChanged ? { pipelineFile: rec.pipelineFile } : {}) });
  await door.continueRun(prepared, opts.by);
  return { runId: id, from: prepared.continuation.from };
}

/** Fork through a server's door (POST /api/runs/:id/fork, MCP fork_run, the dashboard). */
export async function forkRunOf(door: ContinueDoor, id: string, step: string, opts: { inputs?: Record<string, string>; by: DeliveredBy }): Promise<{ runId: string; forkOf: string; from: string }> {
  const prepared = await prepareFork(door, id, step, { allowed: underDoor(door), by: opts.by, ...(opts.inputs ? { inputs: opts.inputs } : {}) });
  const runId = await door.continueRun(prepared, opts.by);
  return { runId, forkOf: id, from: step };
}

/**
 * Approve or reject through a server's door, and go on: an approved run goes on in the runner exec waiting at
 * its gate if one is, else in this server. `goesOn` says where (null: rejected).
 */
export async function decideRunOf(
  door: ContinueDoor,
  id: string,
  decision: 'approved' | 'rejected',
  opts: { comment?: string; by: DeliveredBy },
): Promise<{ runId: string; step: string; decision: string; status: string; goesOn: 'here' | 'waiting_exec' | null }> {
  const d = await decideGate(door, id, decision, opts);
  const out = { runId: id, step: d.step, decision, status: d.status };
  if (decision === 'rejected') return { ...out, goesOn: null };
  if (await gateWaiterAlive(door.home, id)) return { ...out, goesOn: 'waiting_exec' };
  const prepared = await prepareResume(door, id, { how: 'approval', allowed: underDoor(door), by: opts.by });
  await door.continueRun(prepared, opts.by);
  return { ...out, goesOn: 'here' };
}
