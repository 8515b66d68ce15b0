/**
 * The runs runner serve accepted, on disk from the moment it gives out their
 * id: a `queued` record, overwritten by the run's own once it starts, or
 * turned `not_started` with why when it never does (a missing secret, a
 * project gone, canceled while queued). So nothing the server said 202 to is
 * lost: a server killed with runs queued finds their records when it starts
 * again and runs them in the order they were asked for.
 */
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { mkdir } from 'node:fs/promises';
import type { LoadedPipeline } from '../pipeline/load.js';
import { newRecord, type RunRecord } from '../run/record.js';
import { listRuns, readRun, runDir } from '../run/records.js';
import { withOwnerLock } from '../run/owner-lock.js';
import type { Pending } from '../schedule/scheduler.js';

/** The record of a run accepted and not started yet. Pure. */
export function queuedRecord(p: Pending, loaded: LoadedPipeline | undefined, at: Date): RunRecord {
  return newRecord({
    runId: p.runId,
    pipeline: p.pipeline,
    pipelineFile: loaded ? path.resolve(loaded.file) : '',
    ...(p.inputs ? { inputs: p.inputs } : {}),
    project: loaded ? path.resolve(loaded.dir, loaded.pipeline.project.path) : '',
    workspace: loaded?.pipeline.project.workspace ?? 'git_worktree',
    status: 'queued',
    startedAt: at.toISOString(),
    requestedBy: p.why,
    ...(p.startedBy ? { startedBy: p.startedBy } : {}),
    pid: process.pid,
  });
}

export class RunRequests {
  constructor(
    private readonly runsDir: string,
    /** the runner home (the runs' owner locks are named after it) */
    private readonly home: string = path.dirname(runsDir),
  ) {}

  /** The run's directory and its queued record, made holding its owner lock: recovery removes a directory without a record only once no one holds it. */
  async queued(p: Pending, loaded: LoadedPipeline | undefined, at: Date): Promise<void> {
    await withOwnerLock(this.home, p.runId, async () => {
      await mkdir(runDir(this.runsDir, p.runId), { recursive: true, mode: 0o755 });
      await writeFileAtomic(path.join(runDir(this.runsDir, p.runId), 'run.json'), `${JSON.stringify(queuedRecord(p, loaded, at), null, 2)}\n`);
    });
  }

  /** Marks a run that was accepted and will never start, with why; a run that did start keeps its own record. */
  async notStarted(p: Pending, loaded: LoadedPipeline | undefined, error: { code: string; message: string }, at: Date): Promise<RunRecord> {
    return withOwnerLock(this.home, p.runId, async () => {
      const existing = await readRun(this.runsDir, p.runId).catch(() => undefined);
      if (existing && existing.status !== 'queued') return existing;
      const rec: RunRecord = { ...(existing ?? queuedRecord(p, loaded, at)), status: 'not_started', finishedAt: at.toISOString(), error };
      await mkdir(runDir(this.runsDir, p.runId), { recursive: true, mode: 0o755 });
      await writeFileAtomic(path.join(runDir(this.runsDir, p.runId), 'run.json'), `${JSON.stringify(rec, null, 2)}\n`);
      return rec;
    });
  }

  /** Runs a server accepted and never started (it was stopped or killed), oldest first: the queue to take up again. */
  async leftQueued(): Promise<RunRecord[]> {
    const all = await listRuns(this.runsDir, { where: (r) => r.status === 'queued' });
    return all.sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.runId.localeCompare(b.runId));
  }

  /** Each pipeline whose newest run could not start, with that run: for the pipelines list. */
  async lastFailures(): Promise<Map<string, RunRecord>> {
    const newest = new Map<string, RunRecord>();
    for (const r of await listRuns(this.runsDir)) if (!newest.has(r.pipeline)) newest.set(r.pipeline, r);
    return new Map([...newest].filter(([, r]) => r.status === 'not_started'));
  }
}
