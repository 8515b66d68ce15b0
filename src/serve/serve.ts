/**
 * `runner serve`: the pipelines of a folder, run on their schedules. Recovers
 * the runner home at start, reloads the folder when it changes, keeps the last
 * fire of each schedule (for catch-up) in `<home>/schedule.json`, and on stop
 * lets running steps finish up to a grace period, then cancels them cleanly.
 */
import { watch, type FSWatcher } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { errorMessage, RunnerError } from '../common/errors.js';
import type { ContainerRuntime } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { resolveInputs } from '../pipeline/inputs.js';
import { executeRun } from '../run/orchestrator.js';
import { reconcile } from '../run/reconcile.js';
import type { Reporter } from '../run/reporter.js';
import { newRunId } from '../run/run-id.js';
import { Scheduler, type ScheduledPipeline } from '../schedule/scheduler.js';
import { RunnerHome } from '../workspace/home.js';
import { createApi } from './api.js';
import { loadDashboard } from './dashboard.js';
import { PipelineDir } from './pipeline-dir.js';

export interface ServeOptions {
  pipelinesDir: string;
  home: string;
  maxConcurrent: number;
  graceMs: number;
  /** aborted to stop the server */
  stop: AbortSignal;
  say: (message: string) => void;
  /** a reporter for one run of a pipeline */
  reporterFor: (pipeline: string) => Reporter;
  /** serve the HTTP API there (port 0: any free port) */
  listen?: { host: string; port: number };
  /** required on every API call but /healthz, when set */
  token?: string;
}

export interface ServeDeps {
  runtime: ContainerRuntime;
  makeGit: (who: GitIdentity) => Git;
}

export async function serve(o: ServeOptions, deps: ServeDeps): Promise<void> {
  const home = new RunnerHome(o.home);
  await home.ensure();
  // In a container (docker compose), the home must be the host's directory at the same path: steps mount from it.
  await deps.runtime.checkHostPaths([home.root]);
  const recovered = await reconcile({ runtime: deps.runtime, makeGit: deps.makeGit, clock: () => new Date(), say: o.say }, home);
  if (recovered.interrupted.length) o.say(`recovered ${recovered.interrupted.length} interrupted run(s)`);

  const fires = await FireLog.open(path.join(home.root, 'schedule.json'));
  const dir = new PipelineDir(o.pipelinesDir);
  const live = new Map<string, { pipeline: string; why: string; cancel: AbortController; done: Promise<void> }>(); // by run id
  const notStarted = new RecentFailures(100);

  const scheduler = new Scheduler({
    now: () => new Date(),
    setTimer: (ms, fn) => {
      const t = setTimeout(fn, ms);
      return { cancel: () => clearTimeout(t) };
    },
    maxConcurrent: o.maxConcurrent,
    lastFire: (p, i) => fires.get(p, i),
    recordFire: (p, i, at) => fires.set(p, i, at),
    log: o.say,
    newRunId: () => newRunId(new Date()),
    start: ({ pipeline: name, why, runId, inputs }) => {
      const loaded = dir.pipelines().find((p) => p.pipeline.name === name);
      if (!loaded) {
        notStarted.add(runId, name, `the pipeline ${name} was removed before the run could start`);
        return Promise.resolve();
      }
      const cancel = new AbortController();
      o.say(`${name}: starting run ${runId} (${why})`);
      const done = executeRun(
        {
          runtime: deps.runtime,
          makeGit: deps.makeGit,
          clock: () => new Date(),
          reporter: o.reporterFor(name),
          signal: cancel.signal,
          killSignal: new AbortController().signal,
        },
        { loaded, home: home.root, keepWorkspace: false, secretSource: process.env, runId, ...(inputs ? { inputs } : {}) },
      ).then(
        (r) => o.say(`${name}: run ${r.runId} ${r.status}`),
        (err) => {
          notStarted.add(runId, name, errorMessage(err));
          o.say(`${name}: run ${runId} could not start: ${errorMessage(err)}`);
        },
      );
      const entry = { pipeline: name, why, cancel, done: done.finally(() => live.delete(runId)) };
      live.set(runId, entry);
      return entry.done;
    },
  });

  const reload = async () => {
    if (!(await dir.scan())) return;
    for (const s of dir.states()) for (const e of s.errors) o.say(`pipeline file problem: ${e}`);
    const list = dir.pipelines().map(toScheduled);
    scheduler.setPipelines(list);
    o.say(`watching ${list.length} pipeline(s): ${list.map((p) => p.name).join(', ') || 'none'}`);
  };
  await reload();

  let watcher: FSWatcher | undefined;
  let pending: NodeJS.Timeout | undefined;
  const soon = () => {
    clearTimeout(pending);
    pending = setTimeout(() => void reload().catch((e) => o.say(`reload failed: ${errorMessage(e)}`)), 300);
  };
  try {
    watcher = watch(o.pipelinesDir, soon);
  } catch (err) {
    o.say(`cannot watch ${o.pipelinesDir} (${errorMessage(err)}): rescanning every 10 s`);
  }
  const rescan = setInterval(soon, 10_000);

  let api: http.Server | undefined;
  if (o.listen) {
    api = createApi(
      {
        runsDir: home.runs,
        queueLength: () => scheduler.queueLength(),
        trigger: (name, inputs) => {
          if (o.stop.aborted) throw new RunnerError('stopping', 'runner serve is stopping: it takes no new runs');
          const loaded = dir.pipelines().find((p) => p.pipeline.name === name);
          if (!loaded) return undefined;
          resolveInputs(loaded.pipeline, inputs); // a wrong name or a missing value is a 400 now, not a failed run later
          return scheduler.trigger(name, inputs);
        },
        cancel: (runId) => {
          const dropped = scheduler.dequeue(runId);
          if (dropped) {
            notStarted.add(runId, dropped.pipeline, 'canceled before it started');
            return true;
          }
          const run = live.get(runId);
          run?.cancel.abort();
          return run !== undefined;
        },
        notStarted: (runId) => {
          const q = scheduler.queued().find((p) => p.runId === runId);
          if (q) return { runId, pipeline: q.pipeline, status: 'queued', why: q.why, error: null };
          const started = live.get(runId); // asked for before its record is written (workspace, images)
          if (started) return { runId, pipeline: started.pipeline, status: 'starting', why: started.why, error: null };
          return notStarted.get(runId);
        },
        active: () => [...scheduler.queued().map((p) => p.runId), ...live.keys()],
        pipelines: () =>
          dir.states().map((st) => ({
            name: st.loaded?.pipeline.name ?? null,
            file: st.file,
            nextRuns: st.loaded ? scheduler.nextFires(st.loaded.pipeline.name).map((d) => d.toISOString()) : [],
            inputs: st.loaded?.pipeline.inputs ?? {},
            errors: st.errors,
          })),
      },
      o.token,
      await loadDashboard(),
    );
    await new Promise<void>((resolve, reject) => {
      api!.once('error', reject);
      api!.listen(o.listen!.port, o.listen!.host, () => resolve());
    });
    const addr = api.address() as AddressInfo;
    o.say(`listening on http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`);
  }

  await new Promise<void>((resolve) => (o.stop.aborted ? resolve() : o.stop.addEventListener('abort', () => resolve(), { once: true })));
  o.say(`stopping: no new runs; ${live.size} running run(s) get ${Math.round(o.graceMs / 1000)} s to finish`);
  scheduler.stop();
  api?.close();
  api?.closeAllConnections();
  watcher?.close();
  clearInterval(rescan);
  clearTimeout(pending);
  const all = Promise.all([...live.values()].map((r) => r.done));
  const timer = new Promise<'late'>((r) => setTimeout(() => r('late'), o.graceMs).unref());
  if ((await Promise.race([all.then(() => 'done' as const), timer])) === 'late') {
    o.say('grace period over: canceling the running runs (their work is committed)');
    for (const r of live.values()) r.cancel.abort();
    await all;
  }
}

function toScheduled(l: { pipeline: { name: string; schedule?: Array<{ cron: string; timezone?: string | undefined; overlap: 'skip' | 'queue' | 'allow'; catchup: boolean }> | undefined } }): ScheduledPipeline {
  return { name: l.pipeline.name, entries: l.pipeline.schedule ?? [] };
}

/** The last fire of each schedule entry, kept across restarts for catch-up. */
class FireLog {
  private constructor(
    private readonly file: string,
    private readonly data: Record<string, string>,
  ) {}

  static async open(file: string): Promise<FireLog> {
    const text = await readFile(file, 'utf8').catch(() => '{}');
    let data: Record<string, string> = {};
    try {
      data = JSON.parse(text) as Record<string, string>;
    } catch {
      // a damaged file only costs catch-up
    }
    return new FireLog(file, data);
  }

  get(pipeline: string, entry: number): Date | undefined {
    const v = this.data[`${pipeline}#${entry}`];
    return v ? new Date(v) : undefined;
  }

  set(pipeline: string, entry: number, at: Date): void {
    this.data[`${pipeline}#${entry}`] = at.toISOString();
    void writeFileAtomic(this.file, JSON.stringify(this.data, null, 2)).catch(() => undefined);
  }
}

/** Runs given an id that never got a record (the pipeline broke, or they were canceled while queued), so the API can say why. */
class RecentFailures {
  private readonly byId = new Map<string, { runId: string; pipeline: string | null; status: 'not_started'; error: string }>();

  constructor(private readonly keep: number) {}

  add(runId: string, pipeline: string | null, error: string): void {
    this.byId.set(runId, { runId, pipeline, status: 'not_started', error });
    if (this.byId.size > this.keep) this.byId.delete(this.byId.keys().next().value!);
  }

  get(runId: string) {
    return this.byId.get(runId);
  }
}
