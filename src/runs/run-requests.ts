/**
 * The runs runner serve accepted, on disk from the moment it gives out their
 * id: a `queued` record, overwritten by the run's own once it starts, or
 * turned `not_started` with why when it never does (a missing secret, a
 * project gone, canceled while queued). So nothing the server said 202 to is
 * lost: a server killed with runs queued finds their records when it starts
 * again and runs them in the order they were asked for.
 *
 * A run accepted is claimed by the process that accepted it until it ends
 * (a kernel lock, released the moment that process dies: common/kernel-lock.ts),
 * so another door on the same home (a second server, `runner mcp`) never takes
 * up, nor marks not_started, a run a live process still has queued or is
 * starting: only a run whose process is gone is left to take up.
 */
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { mkdir } from 'node:fs/promises';
import type { LoadedPipeline } from '../pipeline/load.js';
import { newRecord, type RunRecord } from '../run/record.js';
import { listRuns, readRun, runDir } from '../run/records.js';
import { withOwnerLock } from '../run/owner-lock.js';
import { isLocked, tryLock, type HeldLock } from '../common/kernel-lock.js';
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

/** The runs this process accepted and that have not ended, by home and run id. */
const claims = new Map<string, HeldLock>();
const claimKey = (home: string, runId: string) => `${home}\n${runId}`;

/** Claims run `runId` of `home` for this process, until releaseRun (or its death). */
export async function claimRun(home: string, runId: string): Promise<void> {
  const k = claimKey(home, runId);
  if (claims.has(k)) return;
  const held = await tryLock('accepted', k);
  if (held) claims.set(k, held);
}

/** The run ended, or will never start: another door may take it up no more, and need not wait for it. */
export async function releaseRun(home: string, runId: string): Promise<void> {
  const k = claimKey(home, runId);
  const held = claims.get(k);
  claims.delete(k);
  await held?.release();
}

/** True when another live process accepted the run and holds it (queued there, or starting). */
export async function acceptedElsewhere(home: string, runId: string): Promise<boolean> {
  const k = claimKey(home, runId);
  return !claims.has(k) && isLocked('accepted', k);
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
      await claimRun(this.home, p.runId);
    });
  }

  /** Marks a run that was accepted and will never start, with why; a run that did start keeps its own record. */
  async notStarted(p: Pending, loaded: LoadedPipeline | undefined, error: { code: string; message: string }, at: Date): Promise<RunRecord> {
    const rec = await withOwnerLock(this.home, p.runId, async () => {
      const existing = await readRun(this.runsDir, p.runId).catch(() => undefined);
      if (existing && existing.status !== 'queued') return existing;
      const rec: RunRecord = { ...(existing ?? queuedRecord(p, loaded, at)), status: 'not_started', finishedAt: at.toISOString(), error };
      await mkdir(runDir(this.runsDir, p.runId), { recursive: true, mode: 0o755 });
      await writeFileAtomic(path.join(runDir(this.runsDir, p.runId), 'run.json'), `${JSON.stringify(rec, null, 2)}\n`);
      return rec;
    });
    await releaseRun(this.home, p.runId);
    return rec;
  }

  /** Runs a server accepted and never started (it was stopped or killed), oldest first: the queue to take up again. A run a live process still holds is its own. */
  async leftQueued(): Promise<RunRecord[]> {
    const queued = await listRuns(this.runsDir, { where: (r) => r.status === 'queued' });
    const all: RunRecord[] = [];
    for (const r of queued) if (!(await isLocked('accepted', claimKey(this.home, r.runId)))) all.push(r);
    return all.sort((a, b) => a.startedAt.localeCompare(b.startedAt) || a.runId.localeCompare(b.runId));
  }

  /** Each pipeline whose newest run could not start, with that run: for the pipelines list. */
  async lastFailures(): Promise<Map<string, RunRecord>> {
    const newest = new Map<string, RunRecord>();
    for (const r of await listRuns(this.runsDir)) if (!newest.has(r.pipeline)) newest.set(r.pipeline, r);
    return new Map([...newest].filter(([, r]) => r.status === 'not_started'));
  }
}
