/**
 * `runner serve`: the pipelines of a folder, run on their schedules. Recovers
 * the runner home at start, reloads the folder when it changes, keeps the last
 * fire of each schedule (for catch-up) in `<home>/schedule.json`, and on stop
 * lets running steps finish up to a grace period, then cancels them cleanly.
 */
import { warmPool } from '../run/warm/warm-pool.js';
import type { RunSettings } from '../settings/run-settings.js';
import { watch, type FSWatcher } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFile, realpath } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { errorMessage, RunnerError, UsageError } from '../common/errors.js';
import { tryLock } from '../common/kernel-lock.js';
import type { ContainerRuntime } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { resolveInputs } from '../pipeline/inputs.js';
import { dayBudget, dayOf } from './day-budget.js';
import type { StepTransport } from '../container/runtime.js';
import { reconcile } from '../run/reconcile.js';
import { expireGates, GATE_SWEEP_MS } from '../runs/decide.js';
import type { Reporter } from '../run/reporter.js';
import { newRunId } from '../run/run-id.js';
import type { RunRecord, StartedBy } from '../run/record.js';
import { readRun } from '../run/records.js';
import { RunHolder } from '../runs/holder.js';
import { pipelineProject, projectScope } from '../runs/scope.js';
import { Scheduler, type Pending, type ScheduledPipeline } from '../schedule/scheduler.js';
import { RunnerHome } from '../workspace/home.js';
import { createApi } from './api.js';
import type { NotStarted } from '../runs/show.js';
import { loadDashboard } from './dashboard.js';
import { PipelineDir } from '../runs/pipeline-dir.js';
import { listPipelineFiles } from '../runs/pipeline-list.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { StreamCapSettings } from './stream-caps.js';
import { acceptedElsewhere, RunRequests } from '../runs/run-requests.js';

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
  /** caps on live logs streamed at once, and when a stalled one is cut (defaults: DEFAULT_STREAM_CAPS) */
  logStreams?: Partial<StreamCapSettings>;
  /** required on every API call but /healthz, when set */
  token?: string;
  /** where each run's secrets are read from, as it starts (the environment, a --secrets-file) */
  secrets?: () => Promise<Readonly<Record<string, string | undefined>>>;
  /** what every run gets from the machine (isolation, egress, company network): passed to each run unchanged */
  settings: RunSettings;
  /** real paths: the projects /mcp's agent tasks may work on (--project); none: /mcp starts no agent task */
  projects?: string[];
  /** the runner's version, for /mcp */
  version?: string;
  /** step gateways kept warm (--warm N): a step behind a gateway takes one rather than start its own */
  warm?: number;
}

export interface ServeDeps {
  runtime: ContainerRuntime;
  /** how steps' workspaces reach their containers (the engine's: mounted, or by tar on swarm) */
  transport?: StepTransport;
  makeGit: (who: GitIdentity) => Git;
}

export async function serve(o: ServeOptions, deps: ServeDeps): Promise<void> {
  const home = new RunnerHome(o.home);
  await home.ensure();
  // One server a home: a second would run the same queue twice.
  const serverLock = await tryLock('serve', home.root);
  if (!serverLock) throw new UsageError(`another runner serve is using the runner home ${home.root}: stop it, or give this one another --home`);
  // In a container (docker compose), the home must be the host's directory at the same path: steps mount from it.
  await deps.runtime.checkHostPaths([home.root]);
  const recovered = await reconcile({ runtime: deps.runtime, gateways: deps.transport?.gateways.runtime, makeGit: deps.makeGit, clock: () => new Date(), say: o.say }, home);
  if (recovered.interrupted.length) o.say(`recovered ${recovered.interrupted.length} interrupted run(s)`);

  const fires = await FireLog.open(path.join(home.root, 'schedule.json'));
  const dir = new PipelineDir(o.pipelinesDir);
  const requests = new RunRequests(home.runs, home.root);
  const lastFailure = await requests.lastFailures(); // by pipeline: its newest run, when that one could not start
  const recorded = new Map<string, Promise<void>>(); // run id → its queued record, written
  // Agent tasks /mcp started: pipelines the server wrote under the home, known until their run ends.
  const tasks = new Map<string, LoadedPipeline>();
  const loadedOf = (name: string) => dir.pipelines().find((p) => p.pipeline.name === name) ?? tasks.get(name);
  const neverStarted = async (p: Pending, code: string, message: string) => {
    await recorded.get(p.runId);
    recorded.delete(p.runId);
    const rec = await requests.notStarted(p, loadedOf(p.pipeline), { code, message }, new Date()).catch((err) => {
      o.say(`${p.pipeline}: could not record that run ${p.runId} did not start: ${errorMessage(err)}`);
      return undefined;
    });
    if (rec?.status === 'not_started') lastFailure.set(p.pipeline, rec);
  };
  // Gateways made ahead, for steps behind one (gateway-pool.ts), where the engine's steps have theirs (a swarm's
  // manager, on overlays the nodes share); given back after a while without a run.
  const pool = o.warm ? warmPool(deps, { size: o.warm, home: home.root, settings: o.settings, onProblem: o.say, command: 'serve' }) : undefined;
  await pool?.start();
  // The runs this server runs: held from the queue's start until they end (runs/holder.ts, runner mcp's too).
  const holder = new RunHolder(home, {
    door: 'runner serve',
    runtime: deps.runtime,
    ...(deps.transport ? { transport: deps.transport } : {}),
    ...(pool ? { warmGateways: pool } : {}),
    makeGit: deps.makeGit,
    reporterFor: o.reporterFor,
    secrets: o.secrets ?? (async () => process.env),
    say: o.say,
    settings: o.settings,
    // the pipeline's day: what its runs spent today, from their records (a restart forgets nothing)
    perRun: async (loaded) => {
      const day = await dayOf(home.runs, loaded.pipeline, new Date());
      return day ? { day } : {};
    },
    neverStarted: (p, _loaded, e) => neverStarted(p, e.code, e.message),
  });

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
    accepted: (p) => {
      const written = requests.queued(p, loadedOf(p.pipeline), new Date()).catch((err) => o.say(`${p.pipeline}: could not record run ${p.runId} as queued: ${errorMessage(err)}`));
      recorded.set(p.runId, written);
    },
    // The run is this server's (held) at once, so the API never loses sight of it between queue and record.
    start: (p) =>
      holder
        .hold(p, async () => {
          await recorded.get(p.runId); // its queued record is on disk before its own replaces it
          recorded.delete(p.runId);
          const loaded = loadedOf(p.pipeline);
          if (!loaded) throw new RunnerError('pipeline_gone', `the pipeline ${p.pipeline} was removed from ${o.pipelinesDir} before the run could start`);
          lastFailure.delete(p.pipeline); // a run of the pipeline starts: its last failure is history
          return loaded;
        })
        .finally(() => tasks.delete(p.pipeline)),
  });

  // Runs an earlier server accepted and never started, read before this one accepts any: taken up again,
  // ahead of catch-up runs, in the order they were asked for.
  const left = (await requests.leftQueued()).map(
    (rec): Pending => ({
      pipeline: rec.pipeline,
      why: rec.requestedBy ?? 'trigger',
      runId: rec.runId,
      ...(rec.inputs ? { inputs: rec.inputs } : {}),
      ...(rec.startedBy ? { startedBy: rec.startedBy } : {}),
    }),
  );
  if (left.length) o.say(`taking up ${left.length} run(s) queued before the last stop`);

  const reload = async (carried: Pending[] = []) => {
    if (!(await dir.scan()) && !carried.length) return;
    for (const s of dir.states()) for (const e of s.errors) o.say(`pipeline file problem: ${e}`);
    const list = [...dir.pipelines(), ...tasks.values()].map(toScheduled);
    for (const gone of scheduler.setPipelines(list, carried)) {
      await neverStarted(gone, 'pipeline_gone', `the pipeline ${gone.pipeline} is no longer in ${o.pipelinesDir}`);
    }
    o.say(`watching ${list.length} pipeline(s): ${list.map((p) => p.name).join(', ') || 'none'}`);
  };
  await reload(left);

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
  // Gates whose wait ran out are rejected (timed out) here too, not only when someone next looks (src/runs/decide.ts).
  const gates = setInterval(() => void expireGates(home, new Date()).then((ids) => ids.forEach((id) => o.say(`run ${id}: its gate timed out; rejected`))).catch(() => undefined), GATE_SWEEP_MS);

  const trigger = async (name: string, inputs: Record<string, string>, startedBy: StartedBy) => {
    if (o.stop.aborted) throw new RunnerError('stopping', 'runner serve is stopping: it takes no new runs');
    const loaded = loadedOf(name);
    if (!loaded) return undefined;
    resolveInputs(loaded.pipeline, inputs); // a wrong name or a missing value is a 400 now, not a failed run later
    const runId = scheduler.trigger(name, inputs, startedBy);
    if (runId) await recorded.get(runId); // the 202 comes once the run is on disk: a crash now cannot lose it
    return runId;
  };
  // /mcp: a pipeline of the folder is triggered by name, as POST /api/pipelines/:name/runs; an agent task's
  // pipeline (written under the home) joins the scheduler's pipelines until its run ends, then is triggered the same way.
  const startLoaded = async (loaded: LoadedPipeline, inputs: Record<string, string>, startedBy: StartedBy): Promise<string> => {
    const name = loaded.pipeline.name;
    const own = dir.pipelines().find((p) => p.pipeline.name === name);
    if (!own || path.resolve(own.file) !== path.resolve(loaded.file)) {
      if (own || !loaded.file.startsWith(path.join(home.root, 'mcp-tasks') + path.sep)) throw new RunnerError('pipeline_unknown', `${loaded.file} is not the pipeline ${name} this server runs (list_pipelines)`);
      tasks.set(name, loaded);
      scheduler.setPipelines([...dir.pipelines(), ...tasks.values()].map(toScheduled));
    }
    const runId = await trigger(name, inputs, startedBy);
    if (!runId) throw new RunnerError('pipeline_unknown', `runner serve does not run ${name} now: it may be stopping (list_pipelines)`);
    return runId;
  };
  const projects = o.projects ?? [];
  const dirReal = await realpath(o.pipelinesDir).catch(() => o.pipelinesDir);
  const cancelRun = async (runId: string): Promise<boolean> => {
    const dropped = scheduler.dequeue(runId);
    if (holder.active().includes(runId)) return holder.cancel(runId);
    // Queued here, or queued on disk while this server stops (it would start at the next start): never started.
    const onDisk = dropped ? undefined : await readRun(home.runs, runId).catch(() => undefined);
    // queued by another live process on this home (runner mcp, another server): that process starts it, and cancels it
    if (onDisk?.status === 'queued' && (await acceptedElsewhere(home.root, runId))) return false;
    const pending: Pending | undefined =
      dropped ?? (onDisk?.status === 'queued' ? { pipeline: onDisk.pipeline, why: onDisk.requestedBy ?? 'trigger', runId } : undefined);
    if (!pending) return false;
    await neverStarted(pending, 'canceled', 'canceled before it started');
    return true;
  };
  const notStartedOf = (runId: string): NotStarted | undefined => {
    const q = scheduler.queued().find((p) => p.runId === runId);
    if (q) return { runId, pipeline: q.pipeline, status: 'queued', why: q.why, error: null };
    return holder.notStarted(runId); // asked for before its record is written (workspace, images)
  };
  const activeIds = () => [...scheduler.queued().map((p) => p.runId), ...holder.active()];
  // What this server serves (runs/scope.ts): the projects of its folder's pipelines (and of the agent tasks
  // /mcp started), as they are now, and every project under its --project folders. Every operation checks it.
  const scope = projectScope({
    pipelineProjects: async () => Promise.all([...dir.pipelines(), ...tasks.values()].map(pipelineProject)),
    folders: projects,
    says: `runner serve serves the projects of the pipelines in ${o.pipelinesDir}${projects.length ? ` and the projects under --project ${projects.join(', ')}` : ''}`,
  });

  let api: http.Server | undefined;
  if (o.listen) {
    api = createApi(
      {
        runsDir: home.runs,
        home: home.root,
        scope,
        queueLength: () => scheduler.queueLength(),
        warm: () => ({ gateways: pool?.warm ?? 0, containers: pool?.warmContainers ?? 0, size: o.warm ?? 0 }),
        // the API triggers only the folder's pipelines (an agent task's is /mcp's, for its one run)
        trigger: async (name, inputs, startedBy) => (dir.pipelines().some((p) => p.pipeline.name === name) ? trigger(name, inputs, startedBy) : undefined),
        cancel: cancelRun,
        continueRun: (prepared, startedBy) => holder.continueRun(prepared, startedBy),
        pipelineDirs: [dirReal],
        notStarted: notStartedOf,
        active: activeIds,
        pipelines: () =>
          dir.states().map((st) => ({
            name: st.loaded?.pipeline.name ?? null,
            file: st.file,
            nextRuns: st.loaded ? scheduler.nextFires(st.loaded.pipeline.name).map((d) => d.toISOString()) : [],
            inputs: st.loaded?.pipeline.inputs ?? {},
            errors: st.errors,
            lastFailure: failureOf(st.loaded ? lastFailure.get(st.loaded.pipeline.name) : undefined),
            budgetPerDayUsd: (st.loaded ? dayBudget(st.loaded.pipeline)?.usd : undefined) ?? null,
          })),
      },
      o.token,
      await loadDashboard(),
      {
        ...(o.logStreams ? { logStreams: o.logStreams } : {}),
        say: o.say,
        mcp: {
          version: o.version ?? '0',
          backendFor: (req) => {
            const by = { via: 'mcp' as const, ...(req.socket.remoteAddress ? { from: req.socket.remoteAddress } : {}) };
            return {
              home: home.root,
              runsDir: home.runs,
              scope,
              pipelineDirs: [dirReal],
              projectDirs: projects,
              pipelines: () => listPipelineFiles([dirReal]),
              start: startLoaded,
              cancel: (id) => cancelRun(id),
              continueRun: (prepared, startedBy) => holder.continueRun(prepared, startedBy),
              notStarted: (id) => notStartedOf(id),
              active: () => activeIds(),
              startedBy: by,
              deliveredBy: by,
            };
          },
        },
      },
    );
    await new Promise<void>((resolve, reject) => {
      api!.once('error', reject);
      api!.listen(o.listen!.port, o.listen!.host, () => resolve());
    }).catch(async (err: unknown) => {
      // not serving (its port taken): the gateways made warm for it are not left on the engine
      await pool?.close();
      throw err;
    });
    const addr = api.address() as AddressInfo;
    o.say(`listening on http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`);
  }

  await new Promise<void>((resolve) => (o.stop.aborted ? resolve() : o.stop.addEventListener('abort', () => resolve(), { once: true })));
  const waiting = scheduler.queued().length;
  o.say(
    `stopping: no new runs; ${holder.size} running run(s) get ${Math.round(o.graceMs / 1000)} s to finish` +
      (waiting ? `; ${waiting} queued run(s) stay queued for the next start` : ''),
  );
  // The API keeps answering (reads, live logs; a trigger is a 503) until the last run has ended.
  scheduler.stop();
  watcher?.close();
  clearInterval(rescan);
  clearInterval(gates);
  clearTimeout(pending);
  await holder.stop(o.graceMs);
  await pool?.close();
  await Promise.all(recorded.values());
  if (api) {
    // Live logs of the runs that just ended send their end event and close; whatever is left after 3 s is cut.
    const closed = new Promise<void>((r) => api!.close(() => r()));
    await Promise.race([closed, new Promise((r) => setTimeout(r, 3000).unref())]);
    api.closeAllConnections();
    await closed;
  }
  await serverLock.release();
}

function failureOf(r: RunRecord | undefined): { runId: string; at: string; error: string } | null {
  return r ? { runId: r.runId, at: r.finishedAt ?? r.startedAt, error: r.error?.message ?? 'it did not start' } : null;
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
