/**
 * A run's logs and an agent step's transcript, with the checks in front of
 * them: the run is the door's to show (show.ts), it started (a run that never
 * did has no log), the step is a step id. The CLI follows a log through
 * openLog's cursor; MCP reads a bounded tail or what came after a cursor
 * (log-read.ts); the API streams it (serve/log-watch.ts) after showRun.
 */
import path from 'node:path';
import { RunnerError, UsageError } from '../common/errors.js';
import { LogCursor, logOfStep } from '../run/log-cursor.js';
import type { RunRecord } from '../run/record.js';
import { runDir } from '../run/records.js';
import { safeName } from '../workspace/names.js';
import type { Door } from './door.js';
import { decodeCursor, logFrom, logTail, type LogAnswer } from './log-read.js';
import { showRun, type NotStarted } from './show.js';
import { readTranscript } from './transcript.js';
import type { AgentEvent } from '../agents/events.js';

/** A run that never started has no log: said with why. */
function checkStarted(r: RunRecord): void {
  if (r.status === 'not_started') throw new RunnerError('no_log', `run ${r.runId} never started, so it has no log: ${r.error?.message ?? 'it did not start'}`);
}

/**
 * The run's record and a cursor over its steps' logs, for a reader that
 * follows them (runner logs). A step named that has no log in a run that
 * ended is a usage error that lists the steps that have one.
 */
export async function openLog(door: Door, id: string, step?: string): Promise<{ record: RunRecord; cursor: LogCursor; read: () => Promise<RunRecord> }> {
  const r = await showRun(door, id);
  if (!('steps' in r)) throw new RunnerError('no_log', `run ${id} is ${r.status}: nothing is logged yet`);
  checkStarted(r);
  const cursor = new LogCursor(path.join(runDir(door.runsDir, id), 'steps'));
  if (step && r.status !== 'running' && !(await cursor.steps(r)).some((n) => logOfStep(n, step))) {
    throw new UsageError(`run ${id} has no log for step ${step}; steps: ${(await cursor.steps(r)).join(', ') || 'none'}`);
  }
  const read = async () => {
    const again = await showRun(door, id);
    return 'steps' in again ? again : r;
  };
  return { record: r, cursor, read };
}

/** A bounded piece of the run's log: its tail, or what was written after `cursor` (run_log). */
export async function runLog(
  door: Door,
  id: string,
  o: { step?: string | undefined; tail: number; cursor?: string | undefined; maxBytes: number },
): Promise<{ runId: string; status: string; lines: string[]; note?: string } & Partial<LogAnswer>> {
  const r: RunRecord | NotStarted = await showRun(door, id);
  if (!('steps' in r)) return { runId: id, status: r.status, lines: [], note: 'the run has not started: nothing is logged yet' };
  checkStarted(r);
  const stepsDir = path.join(runDir(door.runsDir, id), 'steps');
  const got = o.cursor ? await logFrom(stepsDir, r, o.step, decodeCursor(o.cursor), o.maxBytes) : await logTail(stepsDir, r, o.step, o.tail, o.maxBytes);
  return { runId: id, status: r.status, ...got };
}

/** A slice of an agent step's transcript (step_transcript). */
export async function stepTranscript(door: Door, id: string, step: string, from: number, maxLines: number): Promise<{ runId: string; step: string; events: AgentEvent[]; nextFrom: number; more: boolean }> {
  await showRun(door, id);
  return { runId: id, step, ...(await readTranscript(runDir(door.runsDir, id), id, step, from, maxLines)) };
}

/** The file of an agent step's transcript, for a reader that streams it whole (runner logs --transcript). */
export async function transcriptFile(door: Door, id: string, step: string): Promise<string> {
  if (safeName(step, 'step') !== step) throw new RunnerError('unsafe_name', `step ${JSON.stringify(step)} is not a step id: give it as runs show names it`);
  await showRun(door, id);
  return path.join(runDir(door.runsDir, id), 'steps', `${step}.transcript.jsonl`);
}
