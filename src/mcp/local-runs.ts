/**
 * The runs `runner mcp` starts, in its own process, as runner serve starts
 * its own (serve.ts): a queued record the moment the id is given out
 * (run-requests.ts), then executeRun, the orchestrator `runner exec` runs;
 * a run that cannot start is recorded not_started with why. So a run started
 * through MCP is a real run, recorded under the home like any other, and
 * `runner runs show` follows it. Cancel is the serve's: the run's abort
 * signal (the step stopped, its work committed).
 */
import { errorMessage, RunnerError } from '../common/errors.js';
import type { ContainerRuntime } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { resolveInputs } from '../pipeline/inputs.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { executeRun } from '../run/orchestrator.js';
import type { StartedBy } from '../run/record.js';
import { readRun } from '../run/records.js';
import type { Reporter } from '../run/reporter.js';
import { newRunId } from '../run/run-id.js';
import type { StepTransport } from '../run/step-transport.js';
import type { RunSettings } from '../settings/run-settings.js';
import { RunRequests } from '../serve/run-requests.js';
import type { NotStarted } from '../serve/run-view.js';
import type { Pending } from '../schedule/scheduler.js';
import { RunnerHome } from '../workspace/home.js';

export interface LocalRunsDeps {
  runtime: ContainerRuntime;
  transport?: StepTransport;
  makeGit: (who: GitIdentity) => Git;
  /** what every run gets from the machine (isolation, egress, company network), as `runner exec` reads it: passed on unchanged */
  settings: RunSettings;
  reporterFor: (pipeline: string) => Reporter;
  /** read as each run starts: a changed file applies to the next run */
  secrets: () => Promise<Readonly<Record<string, string | undefined>>>;
  say: (message: string) => void;
}

interface Live {
  pipeline: string;
  cancel: AbortController;
  kill: AbortController;
  done: Promise<void>;
}

export class LocalRuns {
  private readonly live = new Map<string, Live>();
  private readonly requests: RunRequests;
  private stopping = false;

  constructor(
    private readonly home: RunnerHome,
    private readonly d: LocalRunsDeps,
  ) {
    this.requests = new RunRequests(home.runs, home.root);
  }

  /** Its id once its queued record is on disk; the run goes on in this process. */
  async start(loaded: LoadedPipeline, inputs: Record<string, string>, startedBy: StartedBy): Promise<string> {
    if (this.stopping) throw new RunnerError('stopping', 'runner mcp is stopping: it takes no new runs');
    resolveInputs(loaded.pipeline, inputs); // a wrong name or a missing value is said now, not as a failed run later
    const p: Pending = { pipeline: loaded.pipeline.name, why: 'trigger', runId: newRunId(new Date()), inputs, startedBy };
    await this.requests.queued(p, loaded, new Date());
    const cancel = new AbortController();
    const kill = new AbortController();
    const entry: Live = { pipeline: p.pipeline, cancel, kill, done: Promise.resolve() };
    this.live.set(p.runId, entry);
    entry.done = this.run(p, loaded, cancel.signal, kill.signal).finally(() => this.live.delete(p.runId));
    return p.runId;
  }

  private async run(p: Pending, loaded: LoadedPipeline, signal: AbortSignal, killSignal: AbortSignal): Promise<void> {
    try {
      const secretSource = await this.d.secrets();
      const r = await executeRun(
        { runtime: this.d.runtime, ...(this.d.transport ? { transport: this.d.transport } : {}), makeGit: this.d.makeGit, clock: () => new Date(), reporter: this.d.reporterFor(p.pipeline), signal, killSignal },
        { loaded, home: this.home.root, keepWorkspace: false, secretSource, runId: p.runId, requestedBy: 'trigger', ...(p.startedBy ? { startedBy: p.startedBy } : {}), inputs: p.inputs ?? {}, settings: this.d.settings },
      );
      this.d.say(`${p.pipeline}: run ${r.runId} ${r.status}`);
    } catch (err) {
      this.d.say(`${p.pipeline}: run ${p.runId} could not start: ${errorMessage(err)}`);
      await this.requests
        .notStarted(p, loaded, { code: err instanceof RunnerError ? err.code : 'internal', message: errorMessage(err) }, new Date())
        .catch((e) => this.d.say(`could not record that run ${p.runId} did not start: ${errorMessage(e)}`));
    }
  }

  /** true when the run was this process's and is now canceling; false for one it does not hold, or one already ended. */
  async cancel(runId: string): Promise<boolean> {
    const run = this.live.get(runId);
    if (!run) return false;
    if (run.cancel.signal.aborted) {
      const rec = await readRun(this.home.runs, runId).catch(() => undefined);
      if (rec && rec.status !== 'running' && rec.status !== 'queued') return false;
    }
    run.cancel.abort();
    return true;
  }

  /** A run this process started whose own record is not written yet (workspace, images). */
  notStarted(runId: string): NotStarted | undefined {
    const run = this.live.get(runId);
    return run ? { runId, pipeline: run.pipeline, status: 'starting', why: 'trigger', error: null } : undefined;
  }

  active(): string[] {
    return [...this.live.keys()];
  }

  /** No new runs; the running ones get `graceMs` to end, then are canceled (their work committed), then killed. */
  async stop(graceMs: number): Promise<void> {
    this.stopping = true;
    const all = Promise.all([...this.live.values()].map((r) => r.done));
    if (!this.live.size) return;
    this.d.say(`stopping: ${this.live.size} running run(s) get ${Math.round(graceMs / 1000)} s to finish, then are canceled`);
    const late = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), graceMs).unref())]);
    if (!late) return;
    for (const r of this.live.values()) r.cancel.abort();
    const stuck = await Promise.race([all.then(() => false), new Promise<boolean>((r) => setTimeout(() => r(true), 30_000).unref())]);
    if (stuck) for (const r of this.live.values()) r.kill.abort();
    await all;
  }
}
