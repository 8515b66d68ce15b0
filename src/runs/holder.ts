/**
 * The run holder: the runs a server runs in its own process, `runner serve`
 * (its queue's start) and `runner mcp` alike. A run is held from the moment
 * it is started until it ends: executeRun, the orchestrator `runner exec`
 * runs, with the server's run settings passed unchanged; a run that cannot
 * start is recorded not_started with why (run-requests.ts). While held, a
 * run with no record of its own yet is `starting` (notStarted), and it can
 * be canceled: its abort signal stops the step, its work committed. On stop,
 * no new run is taken; the running ones get a grace period to end, then are
 * canceled, then, if still not ended after KILL_AFTER_MS, killed.
 */
import type { WarmGateways } from '../gateway/host/gateway-pool.js';
import { errorMessage, RunnerError } from '../common/errors.js';
import type { ContainerRuntime } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { resolveInputs } from '../pipeline/inputs.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { executeRun, type ExecOptions } from '../run/orchestrator.js';
import type { StartedBy } from '../run/record.js';
import { readRun } from '../run/records.js';
import type { Reporter } from '../run/reporter.js';
import { newRunId } from '../run/run-id.js';
import type { StepTransport } from '../container/runtime.js';
import type { RunSettings } from '../settings/run-settings.js';
import type { Pending } from '../schedule/scheduler.js';
import { RunnerHome } from '../workspace/home.js';
import { releaseRun, RunRequests } from './run-requests.js';
import type { NotStarted } from './show.js';
import type { Continuation } from '../run/continuation.js';
import type { Prepared } from './resume.js';

/** After a cancel, a run that has not ended in this long is killed (its step's container stopped at once). */
export const KILL_AFTER_MS = 30_000;

export interface HolderDeps {
  /** who holds the runs, in messages: runner serve, runner mcp */
  door: string;
  runtime: ContainerRuntime;
  transport?: StepTransport;
  /** gateways made ahead (--warm): steps behind a gateway take one */
  warmGateways?: WarmGateways;
  makeGit: (who: GitIdentity) => Git;
  reporterFor: (pipeline: string) => Reporter;
  /** read as each run starts: a changed file applies to the next run */
  secrets: () => Promise<Readonly<Record<string, string | undefined>>>;
  say: (message: string) => void;
  /** what every run gets from the machine (isolation, egress, company network: src/settings/), passed to executeRun unchanged */
  settings: RunSettings;
  /** what one run gets besides, from its pipeline (runner serve: the pipeline's day budget) */
  perRun?: (loaded: LoadedPipeline) => Promise<Partial<ExecOptions>>;
  /** start() refuses a run past this many held at once (runner mcp: a client cannot start runs without end); runner serve's queue bounds its own */
  maxLive?: number;
  /** records a run that will never start (default: its record turned not_started, with why) */
  neverStarted?: (p: Pending, loaded: LoadedPipeline | undefined, error: { code: string; message: string }) => Promise<void>;
}

interface Live {
  pipeline: string;
  why: string;
  cancel: AbortController;
  kill: AbortController;
  done: Promise<void>;
  /** a resume: how many starts its record had when it was asked for (show.ts: starting until its record says it started again) */
  continues?: number;
}

export class RunHolder {
  private readonly live = new Map<string, Live>();
  private readonly requests: RunRequests;
  private stopping = false;

  constructor(
    private readonly home: RunnerHome,
    private readonly d: HolderDeps,
  ) {
    this.requests = new RunRequests(home.runs, home.root);
  }

  /** Starts a run now (runner mcp): its id once its queued record is on disk; the run goes on in this process. */
  async start(loaded: LoadedPipeline, inputs: Record<string, string>, startedBy: StartedBy): Promise<string> {
    if (this.stopping) throw new RunnerError('stopping', `${this.d.door} is stopping: it takes no new runs`);
    resolveInputs(loaded.pipeline, inputs); // a wrong name or a missing value is said now, not as a failed run later
    if (this.d.maxLive !== undefined && this.live.size >= this.d.maxLive) {
      throw new RunnerError('busy', `${this.d.door} holds ${this.live.size} runs, as many as it runs at once (${this.d.maxLive}): wait for one to end (or cancel one), then start this again`);
    }
    const p: Pending = { pipeline: loaded.pipeline.name, why: 'trigger', runId: newRunId(new Date()), inputs, startedBy };
    await this.requests.queued(p, loaded, new Date());
    void this.hold(p, async () => loaded);
    return p.runId;
  }

  /**
   * Continues a run (resume.ts prepared it: a resume, an approved gate, a fork) in this process: a fork is
   * a new run, queued on record at once; a resume is the run's own record, which is left as it is until
   * the run takes it up. Its id; the run goes on in the background.
   */
  async continueRun(prepared: Prepared, startedBy: StartedBy): Promise<string> {
    if (this.stopping) throw new RunnerError('stopping', `${this.d.door} is stopping: it takes no new runs`);
    const c = prepared.continuation;
    const runId = c.kind === 'resume' ? c.prior.runId : newRunId(new Date());
    if (this.live.has(runId)) throw new RunnerError('not_resumable', `run ${runId} is being run here already`);
    const p: Pending = { pipeline: prepared.loaded.pipeline.name, why: 'trigger', runId, inputs: prepared.inputs, startedBy };
    if (c.kind === 'fork') await this.requests.queued(p, prepared.loaded, new Date());
    void this.hold(p, async () => prepared.loaded, c);
    return runId;
  }

  /**
   * Holds run `p` from now until it ends (runner serve's queue hands it its runs here): `load` gives its
   * pipeline (undefined: gone, recorded not_started). Resolves when the run has ended, never rejects.
   */
  hold(p: Pending, load: () => Promise<LoadedPipeline | undefined>, continuation?: Continuation): Promise<void> {
    const entry: Live = { pipeline: p.pipeline, why: p.why, cancel: new AbortController(), kill: new AbortController(), done: Promise.resolve() };
    if (continuation?.kind === 'resume') entry.continues = continuation.prior.attempts?.length ?? 1;
    this.live.set(p.runId, entry);
    entry.done = this.run(p, load, entry, continuation).finally(async () => {
      this.live.delete(p.runId);
      await releaseRun(this.home.root, p.runId).catch(() => undefined);
    });
    return entry.done;
  }

  private async run(p: Pending, load: () => Promise<LoadedPipeline | undefined>, entry: Live, continuation?: Continuation): Promise<void> {
    let loaded: LoadedPipeline | undefined;
    try {
      loaded = await load();
      if (!loaded) throw new RunnerError('pipeline_gone', `the pipeline ${p.pipeline} was removed before the run could start`);
      this.d.say(`${p.pipeline}: starting run ${p.runId} (${p.why})`);
      const secretSource = await this.d.secrets();
      const extra = this.d.perRun ? await this.d.perRun(loaded) : {};
      const r = await executeRun(
        { runtime: this.d.runtime, ...(this.d.transport ? { transport: this.d.transport } : {}), ...(this.d.warmGateways ? { warmGateways: this.d.warmGateways } : {}), makeGit: this.d.makeGit, clock: () => new Date(), reporter: this.d.reporterFor(p.pipeline), signal: entry.cancel.signal, killSignal: entry.kill.signal },
        {
          loaded,
          home: this.home.root,
          keepWorkspace: false,
          secretSource,
          runId: p.runId,
          requestedBy: p.why,
          ...(p.startedBy ? { startedBy: p.startedBy } : {}),
          inputs: p.inputs ?? {},
          ...extra,
          settings: this.d.settings,
          ...(continuation ? { continuation } : {}),
        },
      );
      this.d.say(`${p.pipeline}: run ${r.runId} ${r.status}`);
    } catch (err) {
      if (!(err instanceof RunnerError && err.code === 'pipeline_gone')) this.d.say(`${p.pipeline}: run ${p.runId} could not start: ${errorMessage(err)}`);
      // a resume that could not go on leaves the run's record as it was (its error said above)
      if (continuation?.kind === 'resume') return;
      const error = { code: err instanceof RunnerError ? err.code : 'internal', message: errorMessage(err) };
      await (this.d.neverStarted ? this.d.neverStarted(p, loaded, error) : this.requests.notStarted(p, loaded, error, new Date())).catch((e) =>
        this.d.say(`${p.pipeline}: could not record that run ${p.runId} did not start: ${errorMessage(e)}`),
      );
    }
  }

  /** true when the run is held here and is now canceling; false for one it does not hold, or one already ended. */
  async cancel(runId: string): Promise<boolean> {
    const run = this.live.get(runId);
    if (!run) return false;
    // canceled already, and its record says how it ended: it is no longer running (it is only being cleaned up)
    if (run.cancel.signal.aborted) {
      const rec = await readRun(this.home.runs, runId).catch(() => undefined);
      if (rec && rec.status !== 'running' && rec.status !== 'queued') return false;
    }
    run.cancel.abort();
    return true;
  }

  /** A run held here whose own record is not written yet (workspace, images). */
  notStarted(runId: string): NotStarted | undefined {
    const run = this.live.get(runId);
    return run ? { runId, pipeline: run.pipeline, status: 'starting', why: run.why, error: null, ...(run.continues !== undefined ? { continues: run.continues } : {}) } : undefined;
  }

  /** The ids of the runs held here. */
  active(): string[] {
    return [...this.live.keys()];
  }

  get size(): number {
    return this.live.size;
  }

  /** No new runs; the running ones get `graceMs` to end, then are canceled (their work committed), then killed. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const all = Promise.all([...this.live.values()].map((r) => r.done));
    if (!this.live.size) return;
    const late = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (!late) return;
    this.d.say('grace period over: canceling the running runs (their work is committed)');
    for (const r of this.live.values()) r.cancel.abort();
    const stuck = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), KILL_AFTER_MS).unref())]);
    if (stuck) {
      this.d.say(`runs still running ${KILL_AFTER_MS / 1000} s after their cancel are killed`);
      for (const r of this.live.values()) r.kill.abort();
    }
    await all;
  }
}
