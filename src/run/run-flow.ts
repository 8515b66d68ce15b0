/**
 * The steps of a run, as the flow planner orders them: the one place that
 * executes what the planner decides. It starts each unit the planner names
 * (in the run's workspace, or in a lane of its own), tells the planner how it
 * ended, merges lanes back when the planner says so, and waits (for a unit, a
 * merge, a retry's backoff, or a cancel) until the planner says the run is over.
 */
import { availableParallelism } from 'node:os';
import { errorMessage, RunnerError } from '../common/errors.js';
import { formatDuration } from '../common/durations.js';
import { flowPlan } from '../flow/flow-plan.js';
import { DEFAULT_MAX_VISITS, FlowPlanner, laneName, type FlowStop, type Unit } from '../flow/planner.js';
import type { PipelineFile } from '../pipeline/schema.js';
import type { RunIdentity } from '../plan/render.js';
import type { StepPlan } from '../plan/step-plan.js';
import { GitWorkspace } from '../workspace/git-workspace.js';
import type { Workspace } from '../workspace/workspace.js';
import { mergeMessage } from './commit-message.js';
import { HookRunner } from './hook-runner.js';
import type { ExecDeps } from './orchestrator.js';
import { workBefore, type Continuation } from './continuation.js';
import { decisionFor, describeDecider, gateOutputs, gateWait, type GateWait } from './gate.js';
import type { RunningStep, RunRecord } from './record.js';
import { refuseStep, runStep, unitFields, type StepContext } from './run-step.js';
import { baseCanTell, checkOnBase, describeBase } from './base-check.js';
import { describeStatus, resultName, workNotRecorded, type StepResult } from './step-result.js';
import type { RunStore } from './store.js';
import type { Masker } from '../common/mask.js';
import type { RunSpending } from './step-network.js';

export interface FlowContext {
  deps: ExecDeps;
  home: string;
  graceSeconds: number;
  pipeline: PipelineFile;
  plans: StepPlan[];
  ws: Workspace;
  record: RunRecord;
  store: RunStore;
  masker: Masker;
  secrets: Record<string, string>;
  spending: RunSpending;
  /** a resume or a fork: the units not run again (continuation.ts) */
  continuation?: Continuation;
}

/** What runFlow tells its caller beyond the record: the gate the run stopped at, if it did. */
export interface FlowEnd {
  gate?: GateWait;
}

export async function runFlow(c: FlowContext): Promise<FlowEnd> {
  const { deps, record, store, ws } = c;
  const flow = new FlowPlanner(flowPlan(c.pipeline, availableParallelism()), record.inputs ?? {});
  const base: Omit<RunIdentity, 'attempt' | 'branch'> = {
    runId: record.runId,
    pipeline: record.pipeline,
    baseSha: ws.baseSha ?? '',
    taskRun: ws.attempt,
    taskId: record.taskId ?? '',
  };
  /** open lanes by unit key; the branches lanes were on that are not merged (kept for the user unless merged later) */
  const lanes = new Map<string, Workspace>();
  const unmerged = new Set<string>();
  const wake = new Wakeup();
  let fatal: { error: unknown } | undefined;
  record.running = [];
  record.flow = { routes: flow.routes, stop: null, keptBranches: [] };
  const carry = new Map(c.continuation?.carry ?? []);
  /** the gate the run stops at */
  let gate: GateWait | undefined;
  /** the latest approval's comment, for the steps after it ($RUNNER_APPROVAL_COMMENT) */
  let approvalComment = [...(record.decisions ?? [])].reverse().find((d) => d.decision === 'approved')?.comment;
  /** names this run's records already use (a resume's earlier attempt): a unit run again is named apart, so its log and files are its own */
  const runAttempt = record.attempts?.length ?? 1;
  const nameFor = (u: Unit): string => (record.steps.some((s) => !s.carried && resultName(s) === u.name) ? `${u.name}~${runAttempt}` : u.name);

  /** a fork: the prior run's steps before the fork point, whose work its branch begins with (a failed agent step's too, which is not carried) */
  const forkedAfter = c.continuation ? workBefore(c.continuation) : [];

  let routesShown = 0;
  /** A route the planner just took, said on the console: where the run goes back to, and how many visits that is. */
  const sayRoutes = () => {
    for (const r of flow.routes.slice(routesShown)) {
      const max = c.pipeline.steps.find((s) => s.id === r.to)?.max_visits ?? DEFAULT_MAX_VISITS;
      deps.reporter.info(`${r.from} → ${r.to} (${r.output}=${r.value}): visit ${r.visit} of ${max}`);
      store.event('route', { ...r });
    }
    routesShown = flow.routes.length;
  };

  const save = () => {
    record.current = record.running?.[0] ? { id: record.running[0].id, startedAt: record.running[0].startedAt } : null;
    return store.writeRecord(record);
  };

  /** A unit the run does not run again (a resume's or a fork's): the flow gets its outcome as recorded. */
  const carryUnit = (u: Unit, done: StepResult): void => {
    if (c.continuation?.kind === 'fork') record.steps.push({ ...done, carried: { from: c.continuation.prior.runId } });
    if (done.approval?.decision === 'approved') approvalComment = done.approval.comment;
    flow.finished(u, { status: 'completed', outputs: done.outputs }, deps.clock().getTime());
    deps.reporter.info(`step ${u.name}: completed before${done.commit ? ` (${done.commit.slice(0, 10)})` : ''}, not run again`);
    store.event('step_carried', { step: u.name, from: c.continuation?.prior.runId, commit: done.commit });
  };

  /** An approval gate: approved, it is done; undecided, the run stops here and waits, holding nothing. */
  const gateUnit = async (u: Unit, approval: NonNullable<StepPlan['approval']>): Promise<void> => {
    const d = decisionFor(record.decisions, u.name);
    if (d?.decision === 'approved') {
      approvalComment = d.comment;
      // the gate's entry spans its wait: from when the run stopped there to the decision
      const waited = c.continuation?.prior.gate?.name === u.name ? c.continuation.prior.gate : undefined;
      const since = waited?.since ?? d.at;
      const message = `approved by ${describeDecider(d.by)}${d.comment ? `: ${d.comment}` : ''}`;
      const result: StepResult = { ...unitFields(u), id: u.id, status: 'completed', exitCode: null, oomKilled: false, timedOut: false, durationMs: Math.max(0, Date.parse(d.at) - Date.parse(since)), startedAt: since, finishedAt: d.at, commit: null, outputs: gateOutputs(d), limits: [], approval: d, message };
      record.steps.push(result);
      flow.finished(u, { status: 'completed', outputs: result.outputs }, deps.clock().getTime());
      deps.reporter.info(`step ${u.name}: approved by ${describeDecider(d.by)}${d.comment ? `: ${d.comment}` : ''}`);
      await save();
      return;
    }
    gate ??= gateWait(u.id, u.name, approval, deps.clock());
    flow.pauseAt(u);
  };

  /**
   * A verify step after an agent step (or in a task's worktree holding earlier runs' work), in the run's worktree,
   * starts from what the run committed: the paths git ignores (node_modules, build output, a venv: where the agent
   * could plant a test runner that says all passed, and no commit or diff shows it) are removed first. What the
   * after_create hook made goes with them, and the hook is not run again: it runs on the host, and would run there on
   * what the agent left (a rewritten setup script, a lockfile it installs from). The verify makes what it needs.
   */
  const freshForVerify = async (plan: StepPlan, where: Workspace, agent: string | undefined): Promise<{ notes: string[] }> => {
    // after an agent step of this run, or in a task's worktree that holds earlier runs' (their agents' leftovers)
    const why = agent !== undefined ? `after agent step ${agent}` : ws.earlierWork !== undefined ? `in ${ws.earlierWork}` : undefined;
    if (!plan.verify || why === undefined || where !== ws || !(ws instanceof GitWorkspace)) return { notes: [] };
    const removed = await ws.removeIgnored();
    if (!removed) return { notes: [] };
    const hooks = c.pipeline.hooks?.after_create !== undefined;
    const note = `verify ${why}: ${removed} path${removed === 1 ? '' : 's'} git ignores removed first (node_modules, build output: what no commit holds), so the verify starts from what the run committed${hooks ? "; what after_create made went too, and it is not run again (on the host, it would run on what the agent left): the verify's command makes what it needs" : ''}`;
    store.event('verify_fresh', { why, removed });
    return { notes: [note] };
  };

  const runUnit = async (u: Unit): Promise<void> => {
    const plan = c.plans[u.step]!;
    const done = carry.get(u.name);
    if (done) {
      carry.delete(u.name);
      return carryUnit(u, done);
    }
    if (plan.approval) return gateUnit(u, plan.approval);
    u = { ...u, name: nameFor(u) };
    const entry: RunningStep = { id: u.id, name: u.name, startedAt: deps.clock().toISOString(), isolation: plan.isolation, ...(plan.agent ? { agent: plan.agent } : {}) };
    record.running!.push(entry);
    let result: StepResult;
    let outputs: Record<string, string> = {};
    let where = ws;
    try {
      where = u.lane ? (lanes.get(u.key) ?? (await openLane(u))) : ws;
      if (where instanceof GitWorkspace && where !== ws) entry.lane = { worktree: where.path, branch: where.branch, recovery: recoveryOf(where) };
      await save();
      const before = agentBefore([...forkedAfter, ...record.steps]);
      const stepIn = (w: Workspace, unit: Unit, reporter = deps.reporter): StepContext => ({
        deps: reporter === deps.reporter ? deps : { ...deps, reporter },
        home: c.home,
        graceSeconds: c.graceSeconds,
        plan,
        total: c.plans.length,
        ws: w,
        store,
        masker: c.masker,
        identity: { ...base, attempt: unit.attempt, branch: w.branch ?? '', ...(approvalComment !== undefined ? { approvalComment } : {}) },
        unit,
        outputs: flow.outputs,
        secrets: c.secrets,
        inputs: record.inputs ?? {},
        spending: c.spending,
        // a warm container took the workspace's place (a new directory): recovery must know it as the runner's
        workspaceMoved: async () => {
          if (!(w instanceof GitWorkspace)) return;
          if (w === ws) record.recovery = recoveryOf(w);
          else if (entry.lane) entry.lane.recovery = recoveryOf(w);
          await save();
        },
        ...before,
        ...(ws.earlierWork !== undefined ? { earlierWork: ws.earlierWork } : {}),
      });
      const fresh = await freshForVerify(plan, where, before.agentBefore);
      const ran = await runStep({ ...stepIn(where, u), notes: fresh.notes });
      result = ran.result;
      outputs = ran.outputs;
      if (baseCanTell(plan, result) && ws instanceof GitWorkspace && !deps.signal.aborted) await tellBase(u, result, stepIn);
    } catch (err) {
      // A lane that could not be made fails its step; anything else is the runner's own trouble: the run ends in error once the others end.
      const laneFailed = err instanceof LaneError;
      if (!laneFailed) fatal ??= { error: err };
      result = await refuseStep({ deps, plan, unit: u, masker: c.masker, store }, undefined, laneFailed ? 'lane_failed' : 'internal', errorMessage(err));
    }
    const verdict = flow.finished(u, { status: result.status, ...(result.error ? { error: result.error } : {}), outputs }, deps.clock().getTime());
    if (verdict.failure) {
      result.status = 'failed';
      result.error = 'bad_list';
      result.message = [result.message, `for_each: ${verdict.failure}`].filter(Boolean).join('; ');
      deps.reporter.warn(`step ${u.name} failed: ${verdict.failure}`);
    }
    if (verdict.retryInMs !== undefined) {
      result.retryInMs = verdict.retryInMs;
      deps.reporter.info(`step ${u.name} ${describeStatus(result.status, result.exitCode)}: it runs again in ${formatDuration(verdict.retryInMs)} (attempt ${u.attempt + 1})`);
    }
    if (where !== ws) result.lane = { branch: where.branch, merge: 'not_merged' };
    record.running = record.running!.filter((r) => r !== entry);
    if (runAttempt > 1) result.runAttempt = runAttempt;
    record.steps.push(result);
    sayRoutes();
    await save();
  };

  /**
   * A failed verify step, tried once on the run's base (base-check.ts) in a worktree of its own there, opened and
   * closed as a lane is (so recovery knows it): its entry says whether the failure is pre-existing or this run's.
   */
  const tellBase = async (u: Unit, result: StepResult, stepIn: (w: Workspace, unit: Unit, reporter?: ExecDeps['reporter']) => StepContext): Promise<void> => {
    const gws = ws as GitWorkspace;
    const at: Unit = { ...u, key: `${u.key}.base`, name: `${u.name}.base`, lane: true };
    const say = (line: string) => deps.reporter.info(`step ${u.name}: ${line}`);
    const found = await checkOnBase({
      home: c.home,
      plan: c.plans[u.step]!,
      base: gws.baseSha,
      runId: record.runId,
      now: deps.clock,
      say,
      runOnBase: async () => {
        say(`failed; trying it on the run's base ${gws.baseSha.slice(0, 10)} to tell whether it failed before this run (its log: ${at.name})`);
        const lane = await openLane(at, true);
        try {
          // said as part of the step, not as a step of the run's own
          return (await runStep(stepIn(lane, at, bindAll(deps.reporter, { stepStarted: () => undefined, stepFinished: () => undefined })))).result;
        } finally {
          await closeLane(at.key);
          if (lane.branch) {
            await ws.dropBranches([lane.branch]).catch(() => undefined);
            unmerged.delete(lane.branch);
          }
        }
      },
    });
    if (!found) return;
    result.base = found;
    const words = describeBase(found);
    result.message = [result.message, words].filter(Boolean).join('; ');
    store.event('verify_base', { step: u.name, ...found });
    deps.reporter.warn(`step ${u.name} failed: ${words}`);
  };

  /** lanes whose worktrees are being removed: recovery removes them, never commits what is left of them */
  const removing = new Map<string, NonNullable<RunRecord['lanes']>[number]>();
  /** Open lanes, as the record keeps them for recovery: a crash leaves no worktree nobody knows of. */
  const noteLanes = () => {
    record.lanes = [
      ...[...lanes.entries()]
        .filter(([, l]) => l instanceof GitWorkspace && l !== ws)
        .map(([key, l]) => ({ key, worktree: l.path, branch: l.branch!, recovery: recoveryOf(l as GitWorkspace) })),
      ...removing.values(),
    ];
  };

  const openLane = async (u: Unit, atBase = false): Promise<Workspace> => {
    const name = laneName(u.key);
    let lane: Workspace;
    try {
      lane = atBase && ws instanceof GitWorkspace ? await ws.openAtBase(name) : await ws.openLane(name);
    } catch (err) {
      throw new LaneError(`its worktree could not be made: ${errorMessage(err)}`);
    }
    lanes.set(u.key, lane);
    if (lane !== ws) {
      if (lane.branch) unmerged.add(lane.branch);
      noteLanes();
      await save();
      store.event('lane_opened', { step: u.key, worktree: lane.path, branch: lane.branch });
      // A lane is a new worktree of the run's: what after_create sets up (dependencies, say) is set up there too;
      // unless it holds an agent's work (it starts at the run's head, after an agent step, or in a task's worktree
      // holding earlier runs'): the hook runs on the host, and would run there on what the agent left
      const agent = atBase ? undefined : (agentBefore([...forkedAfter, ...record.steps]).agentBefore ?? ws.earlierWork);
      if (agent !== undefined && c.pipeline.hooks?.after_create !== undefined) {
        const from = [...forkedAfter, ...record.steps].some((s) => s.id === agent) ? `the work of agent step ${agent}` : agent;
        deps.reporter.warn(`lane ${name}: after_create is not run in its worktree, which starts from ${from} (the hook runs on the host, and would run on what an agent left): its steps make what they need`);
        store.event('hook_skipped', { hook: 'after_create', worktree: lane.path, why: agent });
      } else if (!(await new HookRunner(c.pipeline.hooks, lane, record, store, c.masker, deps.reporter).run('after_create'))) {
        throw new LaneError(`the after_create hook failed in its worktree ${lane.path}`);
      }
    }
    return lane;
  };

  const mergeUnit = async (u: Unit): Promise<void> => {
    const lane = lanes.get(u.key);
    const last = [...record.steps].reverse().find((s) => s.id === u.id && s.item?.index === u.item);
    if (!lane || lane === ws) {
      flow.merged(u);
      return;
    }
    try {
      const merged = await ws.mergeLane(lane, c.masker.mask(mergeMessage({ runId: record.runId, name: u.name, branch: lane.branch ?? '', status: last ? describeStatus(last.status, last.exitCode) : 'ended' })));
      if ('conflict' in merged) {
        const files = merged.conflict;
        const message = `step ${u.name}'s work conflicts with the run's in ${files.slice(0, 10).join(', ')}${files.length > 10 ? ` and ${files.length - 10} more` : ''}: nothing of it was merged; its work is on branch ${lane.branch}, the run's on ${ws.branch}`;
        if (last?.lane) Object.assign(last.lane, { merge: 'conflict', files });
        deps.reporter.warn(message);
        flow.merged(u, { files, message });
      } else {
        if (last?.lane) Object.assign(last.lane, { merge: merged.commit ? 'merged' : 'unchanged', commit: merged.commit });
        if (merged.commit) deps.reporter.info(`merged ${u.name} (${lane.branch}) into ${ws.branch}: ${merged.commit.slice(0, 10)}`);
        // Its work is on the run branch now: the lane's branch goes (a later visit makes it again).
        if (lane.branch) {
          await ws.dropBranches([lane.branch]).catch((err) => deps.reporter.warn(`could not delete ${lane.branch}: ${errorMessage(err)}`));
          unmerged.delete(lane.branch);
        }
        flow.merged(u);
      }
    } catch (err) {
      const message = `step ${u.name}'s work could not be merged back: ${errorMessage(err)}; it is on branch ${lane.branch}`;
      deps.reporter.warn(message);
      flow.merged(u, { files: [], message, code: 'merge_failed' });
    }
    sayRoutes();
    await closeLane(u.key);
    await save();
  };

  const closeLane = async (key: string): Promise<void> => {
    const lane = lanes.get(key);
    lanes.delete(key);
    if (!lane || lane === ws) return;
    noteLanes();
    const unsaved = record.steps.some((s) => workNotRecorded(s) && s.lane?.branch === lane.branch);
    // on disk as being removed before it is taken apart; if that cannot be written, it is kept
    let remove = !unsaved;
    if (remove && lane instanceof GitWorkspace) {
      removing.set(key, { key, worktree: lane.path, branch: lane.branch, recovery: recoveryOf(lane), removing: true });
      noteLanes();
      remove = await save().then(
        () => true,
        (err) => (deps.reporter.warn(`could not record that the lane worktree ${lane.path} is being removed (${errorMessage(err)}): it is kept`), false),
      );
    }
    try {
      await lane.release(remove);
      if (unsaved) deps.reporter.warn(`a lane's work is not all recorded (on no commit nor patch): its worktree is kept at ${lane.path}`);
      else if (remove) store.event('lane_removed', { step: key, worktree: lane.path });
    } catch (err) {
      deps.reporter.warn(`could not remove the lane worktree ${lane.path}: ${errorMessage(err)}`);
    } finally {
      removing.delete(key);
      noteLanes();
    }
  };

  // The record could not be written, say: the run ends in error once what runs has ended.
  const runnerTrouble = (err: unknown) => {
    fatal ??= { error: err };
    flow.abort();
  };

  const onAbort = () => {
    flow.cancel();
    wake.poke();
  };
  if (deps.signal.aborted) flow.cancel();
  deps.signal.addEventListener('abort', onAbort, { once: true });
  let stop: FlowStop | undefined;
  let status: 'succeeded' | 'failed' | 'canceled';
  try {
    for (;;) {
      const n = flow.next(deps.clock().getTime());
      for (const u of n.start) wake.track(runUnit(u).catch(runnerTrouble));
      if (n.merge) wake.track(mergeUnit(n.merge).catch(runnerTrouble));
      if (n.done) {
        stop = n.done.stop;
        status = n.done.status;
        break;
      }
      if (!wake.busy() && n.wakeAt === undefined) {
        // Nothing runs, nothing waits, and the planner is not done: a bug of the planner's, said rather than waited on forever.
        throw new RunnerError('internal', `the flow stalled with nothing running (${flow.describe()}): please report this`);
      }
      await wake.wait(n.wakeAt !== undefined ? n.wakeAt - deps.clock().getTime() : undefined);
    }
  } finally {
    deps.signal.removeEventListener('abort', onAbort);
    await wake.settled();
    for (const key of [...lanes.keys()]) await closeLane(key);
  }

  // A lane's branch whose work is not on the run branch (a conflict, a cancel, a failed merge) is kept for the user.
  const branches = [...unmerged].filter((b) => b !== ws.branch);
  record.flow.keptBranches = branches;
  record.lanes = [];
  record.flow.stop = stop ?? null;
  // A run waiting at a gate has not skipped what comes after it: those steps are still to run.
  const waits = gate !== undefined && status! !== 'failed' && !deps.signal.aborted && !fatal;
  if (!waits) {
    for (const u of flow.unstarted()) record.steps.push({ ...skipped(c.plans[u.step]!), ...unitFields(u), attempt: undefined });
    for (const id of flow.skipped()) record.steps.push(skipped(c.plans.find((p) => p.id === id)!));
  }
  // A retry that never came (a cancel or a failure during its wait) is not announced in the record.
  for (const r of record.steps) {
    if (r.retryInMs !== undefined && !record.steps.some((x) => x !== r && x.id === r.id && x.item?.index === r.item?.index && (x.attempt ?? 1) > (r.attempt ?? 1))) delete r.retryInMs;
  }
  record.running = [];
  record.current = null;

  record.status = deps.signal.aborted ? 'canceled' : waits ? 'awaiting_approval' : status!;
  record.gate = waits ? gate! : null;
  const refused = record.steps.find((s) => s.error && s.error !== 'bad_list');
  if (stop) record.error = { code: stop.code, message: stop.message };
  else if (refused && record.status !== 'canceled') record.error = { code: refused.error!, message: refused.message ?? refused.error! };
  if (record.error && record.status === 'succeeded') record.status = 'failed';
  if (branches.length) deps.reporter.info(`work not merged into ${ws.branch} is kept on ${branches.length === 1 ? 'branch' : 'branches'} ${branches.slice(0, 10).join(', ')}${branches.length > 10 ? ` and ${branches.length - 10} more` : ''}`);
  if (fatal) throw fatal.error;
  return waits ? { gate: gate! } : {};
}

class LaneError extends Error {}

/** A reporter whose methods are `over`'s where it has them, else `r`'s, each bound to its own object. */
function bindAll(r: ExecDeps['reporter'], over: Partial<ExecDeps['reporter']>): ExecDeps['reporter'] {
  const names = new Set(Object.keys(r));
  for (let p = Object.getPrototypeOf(r) as object | null; p && p !== Object.prototype; p = Object.getPrototypeOf(p) as object | null) {
    for (const k of Object.getOwnPropertyNames(p)) if (k !== 'constructor') names.add(k);
  }
  const out: Record<string, unknown> = {};
  for (const k of names) {
    const own = (over as Record<string, unknown>)[k];
    const v = (r as unknown as Record<string, unknown>)[k];
    out[k] = typeof own === 'function' && own !== v ? own : typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(r) : v;
  }
  return out as unknown as ExecDeps['reporter'];
}



function recoveryOf(lane: GitWorkspace): NonNullable<RunRecord['recovery']> {
  return { gitDir: lane.worktree.gitDir, links: lane.worktree.links, dirId: lane.worktree.dirId };
}

function skipped(plan: StepPlan): StepResult {
  return { id: plan.id, status: 'skipped', exitCode: null, oomKilled: false, timedOut: false, durationMs: 0, commit: null, outputs: {}, limits: [] };
}

/** Wakes the run's loop when a unit or merge ends, a cancel comes, or a retry's wait is over; knows what is still going. */
class Wakeup {
  private poked = false;
  private wakeNow?: () => void;
  private readonly going = new Set<Promise<void>>();

  busy(): boolean {
    return this.going.size > 0 || this.poked;
  }

  track(p: Promise<void>): void {
    const t = p.finally(() => {
      this.going.delete(t);
      this.poke();
    });
    this.going.add(t);
  }

  poke(): void {
    this.poked = true;
    this.wakeNow?.();
  }

  async wait(ms?: number): Promise<void> {
    if (!this.poked) {
      await new Promise<void>((resolve) => {
        const timer = ms !== undefined ? setTimeout(resolve, Math.max(0, ms)) : undefined;
        this.wakeNow = () => {
          if (timer) clearTimeout(timer);
          resolve();
        };
      });
    }
    this.wakeNow = undefined;
    this.poked = false;
  }

  /** Everything tracked has ended (a unit's run never rejects: its failures are results). */
  async settled(): Promise<void> {
    while (this.going.size) await Promise.allSettled([...this.going]);
  }
}

/** The first agent step the run's record holds (this start's, an earlier start's, a fork's carried one), for the caches' trust. Pure. */
export function agentBefore(steps: ReadonlyArray<Pick<StepResult, 'id' | 'agent'>>): { agentBefore?: string } {
  const seen = steps.find((s) => s.agent !== undefined);
  return seen ? { agentBefore: seen.id } : {};
}
