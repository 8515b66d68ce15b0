/**
 * One run of a pipeline, end to end: a workspace (a worktree on run/<runId>,
 * a task worktree or a persistent directory), its hooks, one container per
 * step, the step's work recorded after each, a push, and cleanup that always
 * happens. Dependencies are injected; nothing here is global.
 */
import type { WarmGateways } from '../gateway/host/gateway-pool.js';
import { shellWord } from '../common/shell-word.js';
import type { RunSettings } from '../settings/run-settings.js';
import { companyNetworkOnDisk } from './ca-copy.js';
import path from 'node:path';
import { CanceledError, errorMessage, RunnerError, UsageError } from '../common/errors.js';
import { Masker } from '../common/mask.js';
import { isOwnImage } from '../container/own-images.js';
import { LABELS, type ContainerRuntime, type StepTransport } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { pushLaterHint } from '../git/push.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { resolveInputs } from '../pipeline/inputs.js';
import { planSteps, secretsNeeded } from '../plan/step-plan.js';
import { credentialValueProblems } from '../plan/gateway-inspection.js';
import { flowPlan, inputListProblem } from '../flow/flow-plan.js';
import { RunnerHome } from '../workspace/home.js';
import { openWorkspace, prepareWorkspace, type TaskFlags } from '../workspace/open.js';
import { uncommittedNotice } from '../workspace/uncommitted.js';
import { GitWorkspace } from '../workspace/git-workspace.js';
import { checkHomeReachable } from '../workspace/home-access.js';
import { checkResumeBranch, runBranch } from '../workspace/run-worktree.js';
import type { Workspace } from '../workspace/workspace.js';
import { HookRunner } from './hook-runner.js';
import { newRecord, type RunCleanup, type RunRecord, type StartedBy } from './record.js';
import { resultName, workNotRecorded } from './step-result.js';
import type { Reporter } from './reporter.js';
import { holdOwnerLock } from './owner-lock.js';
import { removeOrphanContainers } from './reconcile.js';
import { newRunId } from './run-id.js';
import { continuedRecord, type Continuation } from './continuation.js';
import { runFlow } from './run-flow.js';
import { spentBy } from '../gateway/host/metering.js';
import { resolveSecrets } from './secrets.js';
import { RunStore } from './store.js';
import { readRun } from './records.js';
import type { RunSpending } from './step-network.js';
import { checkGatewayImage } from '../gateway/host/image.js';
import type { Budget, Spent } from '../gateway/host/budget.js';
import { RunSpend } from '../gateway/host/run-spend.js';
import { mountTransport } from '../container/local/mount-transport.js';
import { useDevcontainer } from './devcontainer-image.js';
import { notifyRunEnd } from '../notify/notifier.js';
import { notifySecrets } from '../notify/rules.js';

export interface ExecDeps {
  runtime: ContainerRuntime;
  /** how a step's workspace reaches its container, as the engine's adapter does it: mounted (the default, mountTransport), or by tar (swarm) */
  transport?: StepTransport;
  makeGit: (who: GitIdentity) => Git;
  clock: () => Date;
  reporter: Reporter;
  /** polite cancel (Ctrl-C): stop the step with a grace period, commit, clean up */
  signal: AbortSignal;
  /** impatient cancel (second Ctrl-C): kill the step's container at once */
  killSignal: AbortSignal;
  /** gateways made ahead (runner serve --warm, runner exec --warm): a step behind a gateway takes one when it can */
  warmGateways?: WarmGateways;
}

export interface ExecOptions {
  loaded: LoadedPipeline;
  home: string;
  keepWorkspace: boolean;
  /** where secrets are read from (the runner's environment) */
  secretSource: Readonly<Record<string, string | undefined>>;
  /** seconds between SIGTERM and SIGKILL when a step is stopped */
  graceSeconds?: number;
  /** run in a task worktree rather than a fresh one */
  task?: TaskFlags;
  /** fail at once, rather than wait, when the workspace is in use by another run */
  noWait?: boolean;
  /** the run's id, when the caller gave it out before the run started (runner serve's trigger) */
  runId?: string;
  /** values for the pipeline's inputs (the rest take their defaults) */
  inputs?: Record<string, string>;
  /** the machine's settings every run of the door gets (isolation, egress, company network: src/settings/); readSettings, or defaultSettings() */
  settings: RunSettings;
  /** what started the run, for its record (runner serve: also why it was asked for, as requestedBy) */
  startedBy?: StartedBy;
  requestedBy?: RunRecord['requestedBy'];
  /** under runner serve: the pipeline's budget per day, and what its runs spent today before this one */
  day?: { budget: Budget; spent: Spent };
  /** a resume (the same run, on its branch) or a fork (a new run from a step of another): continuation.ts */
  continuation?: Continuation;
}

export async function executeRun(deps: ExecDeps, opts: ExecOptions): Promise<RunRecord> {
  const { pipeline } = opts.loaded;
  const { settings } = opts;
  const plans = planSteps(pipeline, settings.isolation ? { isolation: settings.isolation } : {});
  const inputs = resolveInputs(pipeline, opts.inputs ?? {});
  const listProblem = inputListProblem(flowPlan(pipeline, 1), inputs);
  if (listProblem) throw new UsageError(listProblem);

  // Everything that can be checked before a run exists is checked here, so a
  // bad project, a missing secret or an unreachable engine leaves nothing behind.
  const secrets = resolveSecrets(secretsNeeded(plans), opts.secretSource, {
    environment: settings.secretsFromEnvironment !== false,
    ...(settings.secretsFile ? { file: settings.secretsFile } : {}),
  });
  // a credential's value a header cannot carry: said by the secret's name before anything starts
  const credentialProblems = [...new Set(plans.flatMap((p) => credentialValueProblems(p.gateway, secrets)))];
  if (credentialProblems.length) throw new RunnerError('secret_invalid', credentialProblems.join('; '));
  // the notify entries' signing secrets: the runner's own, never given to a step
  const notifySecretValues = resolveSecrets(notifySecrets(pipeline.notify), opts.secretSource, {
    environment: settings.secretsFromEnvironment !== false,
    ...(settings.secretsFile ? { file: settings.secretsFile } : {}),
  });
  const masker = new Masker([...Object.values(secrets), ...Object.values(notifySecretValues)]);
  const prepared = await maskErrors(masker, async () => {
    const userSettings = plans.map((s) => s.user);
    // The project (git) and the engine (images) are checked at once; a problem with the project is said first.
    const [project, engine] = await Promise.allSettled([
      prepareWorkspace(pipeline, opts.loaded.dir, opts.task, userSettings, deps.makeGit, opts.loaded.file),
      (async () => {
        await deps.runtime.ping();
        // approval gates run no container: nothing of the engine is asked for them
        const containers = plans.filter((p) => !p.approval);
        if (containers.some((p) => p.gateway)) await checkGatewayImage(deps.runtime);
        // what the engine's transport cannot do for these steps, or lacks to run any: said before any pull
        await (deps.transport ?? mountTransport(deps.runtime)).checkRun(containers);
        // image: devcontainer: the project's dev container, prepared once per content, becomes those steps' image
        const devcontainer = await useDevcontainer({ runtime: deps.runtime, home: opts.home, project: path.resolve(opts.loaded.dir, pipeline.project.path), settings, masker, say: (line) => deps.reporter.info(masker.mask(line)), warn: (w) => deps.reporter.warn(`dev container: ${w}`) }, containers);
        // The runner's own images first: one that is missing refuses the run before any pull begins.
        const images = [...new Set(containers.map((s) => s.image))].sort((a, b) => Number(isOwnImage(b)) - Number(isOwnImage(a)));
        for (const image of images) {
          await deps.runtime.ensureImage(image, (pr) => deps.reporter.pullProgress(image, pr));
        }
        // a step asked to run under gVisor runs under it or the run does not start
        return { notes: await deps.runtime.checkIsolation(containers), devcontainer };
      })(),
    ]);
    if (project.status === 'rejected') throw project.reason;
    if (engine.status === 'rejected') throw engine.reason;
    return { ...project.value, isolationNotes: engine.value.notes, devcontainer: engine.value.devcontainer };
  });

  const home = new RunnerHome(opts.home);
  await home.ensure();
  // git works in the home as the project's owner: a home it cannot reach is refused before a run exists.
  if (prepared.kind !== 'persistent_directory') {
    await maskErrors(masker, () =>
      checkHomeReachable(home.root, [prepared.kind === 'task_worktree' ? home.tasks : home.worktrees, home.runs], prepared.project, prepared.project.root),
    );
  }
  // A cancel while the workspace and images were being prepared: the run never starts.
  if (deps.signal.aborted) throw new CanceledError('canceled before it started');
  const cont = opts.continuation;
  const resuming = cont?.kind === 'resume';
  const runId = resuming ? cont.prior.runId : (opts.runId ?? newRunId(deps.clock()));
  // Held while the run lives: recovery tells a live run from a dead one by it. Taken before the run's
  // directory exists, so a directory without its record whose owner is gone is known to be a crash's.
  // A continuation waits a moment for it: a decision refused at the same gate (another `runner approve`) holds the
  // lock while it reads the record; one that another door is continuing is refused below, once held.
  const owner = await holdOwnerLockWithin(opts.home, runId, resuming ? RESUME_LOCK_MS : 0).catch((err: unknown) => {
    throw resuming ? new RunnerError('not_resumable', `run ${runId} is being run or continued by another process right now (runner runs show ${runId})`) : err;
  });
  let store: RunStore;
  try {
    // A resume goes on from the record it was planned on: one another door continued meanwhile is not run twice.
    if (resuming) {
      const now = await readRun(home.runs, runId);
      if (now.status !== cont.prior.status || now.steps.length !== cont.prior.steps.length || (now.decisions?.length ?? 0) !== (cont.prior.decisions?.length ?? 0)) {
        throw new RunnerError('not_resumable', `run ${runId} changed since this resume was asked for (it is ${now.status} now): see runner runs show ${runId}`);
      }
      if (prepared.kind === 'git_worktree' && now.branch) {
        const held = [...cont.carry.values()].flatMap((s) => (s.lane ? s.lane.commit : s.commit) ?? []);
        await checkResumeBranch(prepared.git, prepared.project, runId, now.branch, [...held, ...(now.headSha ? [now.headSha] : [])]);
      }
    }
    store = resuming ? await RunStore.reopen(home.runs, runId, masker) : await RunStore.create(home.runs, runId, masker);
  } catch (err) {
    await owner.release();
    throw err;
  }
  const startedAt = deps.clock();
  const fresh = newRecord({
    runId,
    pipeline: pipeline.name,
    pipelineFile: path.resolve(opts.loaded.file),
    inputs,
    project: prepared.kind === 'persistent_directory' ? prepared.dir : prepared.project.root,
    workspace: prepared.kind,
    taskId: opts.task?.id ?? null,
    status: 'running',
    startedAt: startedAt.toISOString(),
    pid: process.pid,
    ...(opts.requestedBy ? { requestedBy: opts.requestedBy } : {}),
    ...(opts.startedBy ? { startedBy: opts.startedBy } : {}),
    deliveryRules: { verifySteps: plans.filter((p) => p.verify).map((p) => p.id), paths: pipeline.delivery?.paths ?? null },
  });
  const record = cont ? continuedRecord(cont, fresh, startedAt) : fresh;
  if (opts.loaded.text !== undefined) record.pipelineCopy = await store.keepPipeline(opts.loaded.text);
  await store.writeRecord(record);
  if (cont) {
    store.event(cont.kind === 'fork' ? 'run_forked' : 'run_resumed', { runId, from: cont.from, how: cont.how, ...(cont.kind === 'fork' ? { of: cont.prior.runId, commit: cont.startAt } : {}) });
    deps.reporter.info(
      cont.kind === 'fork' ? `run ${runId} is a fork of ${cont.prior.runId} from step ${cont.from}` : cont.how === 'approval' ? `run ${runId} goes on after gate ${cont.from}` : `run ${runId} goes on from step ${cont.from}`,
    );
  } else store.event('run_started', { runId, pipeline: pipeline.name, project: record.project, workspace: record.workspace });
  const leftOut = prepared.kind !== 'persistent_directory' && prepared.uncommitted ? uncommittedNotice(prepared.uncommitted, prepared.baseSha) : undefined;
  if (leftOut) {
    store.event('uncommitted_left_out', { count: prepared.kind !== 'persistent_directory' ? prepared.uncommitted?.count : 0 });
    deps.reporter.warn(leftOut);
  }
  if (prepared.devcontainer) store.event('devcontainer', { image: prepared.devcontainer.image, prepared: prepared.devcontainer.prepared, warnings: prepared.devcontainer.warnings });
  for (const note of prepared.isolationNotes) {
    store.event('isolation_note', { note });
    deps.reporter.warn(note);
  }

  let ws: Workspace | undefined;
  let hooks: HookRunner | undefined;
  let removeWorkspace = false;
  // The branch a run makes is named by its record before it exists: a crash in between leaves no branch prune cannot find.
  if (prepared.kind === 'git_worktree') {
    record.branch = runBranch(runId);
    await store.writeRecord(record);
  }
  try {
    ws = await openWorkspace({
      prepared,
      pipeline,
      pipelineFile: record.pipelineFile,
      home,
      runId,
      now: startedAt,
      task: opts.task,
      wait: { noWait: opts.noWait === true, signal: deps.signal, onWait: (m) => deps.reporter.info(m) },
      say: (m) => deps.reporter.info(m),
      ...(cont && prepared.kind === 'git_worktree'
        ? { continued: { start: resuming ? { existing: true as const } : { newFrom: cont.startAt! }, baseSha: cont.prior.baseSha ?? prepared.baseSha } }
        : {}),
    });
    record.worktree = ws.path;
    record.branch = ws.branch;
    record.baseSha = ws.baseSha;
    if (ws instanceof GitWorkspace) record.recovery = { gitDir: ws.worktree.gitDir, links: ws.worktree.links, dirId: ws.worktree.dirId };
    removeWorkspace = ws.disposable && !opts.keepWorkspace;
    // A run that held this workspace before and died may have left its container
    // writing there: with the workspace's lock held now, no live run owns one.
    if (!ws.disposable) await removeOrphanContainers(deps.runtime, opts.home);
    await store.writeRecord(record);
    deps.reporter.runStarted(record, plans.map((p) => p.id));

    hooks = new HookRunner(pipeline.hooks, ws, record, store, masker, deps.reporter);
    if (ws.created && !(await hooks.run('after_create'))) {
      removeWorkspace = true;
      throw new RunnerError('hook_failed', 'the after_create hook failed: the new workspace is removed');
    }
    if (!(await hooks.run('before_run'))) {
      removeWorkspace = false;
      throw new RunnerError('hook_failed', `the before_run hook failed: the workspace is kept at ${ws.path}`);
    }

    const spending: RunSpending = {
      egressNetwork: settings.egress.network,
      egressPrivate: settings.egress.private,
      egressDns: settings.egress.dns,
      egressProxy: settings.egress.proxy,
      // the bundle steps mount: a copy in the home, which the engine sees where the runner does
      company: settings.company && (await companyNetworkOnDisk(home.root, settings.company)),
      prices: pipeline.prices,
      spend: new RunSpend(pipeline.budget, opts.day),
      ...(deps.warmGateways ? { warm: deps.warmGateways } : {}),
    };
    // a resumed run's budget counts what its earlier starts spent
    if (resuming) for (const s of record.steps) spending.spend.add(spentBy(s.usage).tokens, spentBy(s.usage).usd);
    const end = await runFlow({ deps, home: opts.home, graceSeconds: opts.graceSeconds ?? 5, pipeline, plans, ws, record, store, masker, secrets, spending, ...(cont ? { continuation: cont } : {}) });
    if (end.gate) {
      store.event('awaiting_approval', { step: end.gate.name, prompt: end.gate.prompt, deadline: end.gate.deadline });
      deps.reporter.info(`step ${end.gate.name} waits for approval: ${end.gate.prompt}`);
    }
    record.headSha = await ws.head();
    // The run's whole change, kept after the worktree is gone.
    if (ws instanceof GitWorkspace) {
      const big = await ws.saveDiff(path.join(store.dir, 'diff.patch'));
      if (big.length) deps.reporter.info(`diff.patch names ${big.length} file(s) over 16 MiB without their content (${big.slice(0, 3).join(', ')}${big.length > 3 ? ', …' : ''}): it is on branch ${ws.branch}`);
    }
    if (!deps.signal.aborted && record.status !== 'canceled' && ws.branch) await push(deps, ws, pipeline.project, record, store);
  } catch (err) {
    const failedRun = err instanceof RunnerError && (err.code === 'hook_failed' || err.code === 'task_git_replaced');
    record.status = deps.signal.aborted || err instanceof CanceledError ? 'canceled' : failedRun ? 'failed' : 'error';
    record.error ??= { code: err instanceof RunnerError ? err.code : 'internal', message: masker.mask(errorMessage(err)) };
    store.event('run_error', record.error, 'error');
    // The worktree was never made: its branch was taken back with it (unless git kept it), and the record says which.
    if (!ws && prepared.kind === 'git_worktree' && record.branch) {
      const left = await prepared.git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${record.branch}`], { cwd: prepared.project.root, gitDir: prepared.project.commonDir, allowFail: true }).catch(() => undefined);
      if (left?.code !== 0) record.branch = null;
    }
  } finally {
    // What the run's branch records is decided here, once: the outcome goes on disk before anything is
    // taken apart, so recovery after a crash from here on finishes the cleanup and never commits.
    const unsaved = record.steps.find((s) => workNotRecorded(s));
    if (ws && unsaved) deps.reporter.warn(`step ${resultName(unsaved)}'s work is not all recorded (on no commit nor patch): the workspace is kept at ${ws.path}`);
    let remove = Boolean(ws) && removeWorkspace && !unsaved;
    const decided = await decideOutcome(deps, store, record, startedAt, ws ? (remove ? 'remove' : 'keep') : 'none');
    if (ws && remove && !decided) {
      remove = false;
      deps.reporter.warn(`the workspace is kept at ${ws.path}: the run's outcome could not be recorded before its cleanup`);
    }
    if (ws && !remove && ws.disposable) record.keptWorkspace = true;
    // No container of this run may outlive it, whatever happened above.
    let containersGone = false;
    try {
      await deps.runtime.removeByLabels({ [LABELS.runId]: record.runId, [LABELS.home]: opts.home });
      containersGone = true;
      // and no step's network (its gateway's)
      await deps.runtime.removeNetworksByLabels({ [LABELS.runId]: record.runId, [LABELS.home]: opts.home });
    } catch (err) {
      deps.reporter.warn(`could not check for leftover containers of run ${record.runId}: ${errorMessage(err)}`);
    }
    if (ws) await finishWorkspace(opts, deps, ws, hooks, record, store, remove, containersGone);
    const finishedAt = deps.clock();
    record.finishedAt = finishedAt.toISOString();
    record.durationMs = finishedAt.getTime() - Date.parse(record.startedAt);
    const attempt = record.attempts?.[record.attempts.length - 1];
    if (attempt) Object.assign(attempt, { finishedAt: record.finishedAt, status: record.status });
    // a run waiting at a gate has not ended: it holds nothing, and goes on when a person decides
    if (record.status === 'awaiting_approval') Object.assign(record, { finishedAt: null, durationMs: null });
    record.cleanup = null;
    await store.writeRecord(record);
    store.event('run_finished', { status: record.status, headSha: record.headSha, pushed: record.pushed });
    await store.close();
    // in the background: the run's end waits on no receiver (src/notify/)
    notifyRunEnd({ notify: pipeline.notify, record, secrets: notifySecretValues, eventsFile: path.join(store.dir, 'events.jsonl'), now: deps.clock });
    await owner.release();
  }
  deps.reporter.runFinished(record);
  return record;
}

/** after_run, then (for a workspace that goes) before_remove and removal; else release. Hooks run even after a cancel. */
async function finishWorkspace(
  opts: ExecOptions,
  deps: ExecDeps,
  ws: Workspace,
  hooks: HookRunner | undefined,
  record: RunRecord,
  store: RunStore,
  remove: boolean,
  containersGone: boolean,
): Promise<void> {
  const afterCreateFailed = record.error?.code === 'hook_failed' && record.hooks.some((h) => h.name === 'after_create' && !h.ok);
  if (hooks && !afterCreateFailed) await hooks.run('after_run');
  try {
    if (remove) {
      if (hooks && !afterCreateFailed) await hooks.run('before_remove');
      // a worktree a step could still be writing to is never prepared for another run
      await ws.release(true, { reuse: containersGone });
      store.event('workspace_removed', { path: ws.path });
    } else {
      await ws.release(false);
      if (ws.disposable) {
        deps.reporter.info(`workspace kept at ${ws.path} (once you are done with it: runner gc --yes --home ${shellWord(opts.home)} ${record.runId})`);
      }
    }
  } catch (err) {
    deps.reporter.warn(`could not ${remove ? 'remove' : 'release'} the workspace ${ws.path}: ${errorMessage(err)}`);
  }
}

/**
 * Writes the run's final status, with what its cleanup will do, before any of
 * it starts (atomically, as every record). False when it could not be written:
 * then nothing may be taken apart, since a crash would leave a record that
 * still says running over a half-cleaned tree.
 */
async function decideOutcome(deps: ExecDeps, store: RunStore, record: RunRecord, startedAt: Date, workspace: RunCleanup['workspace']): Promise<boolean> {
  const now = deps.clock();
  // a run that stops at a gate has not ended: no end time, not even for the moment of its cleanup
  const waits = record.status === 'awaiting_approval';
  record.finishedAt = waits ? null : now.toISOString();
  record.durationMs = waits ? null : now.getTime() - startedAt.getTime();
  record.cleanup = { since: now.toISOString(), workspace };
  try {
    await store.writeRecord(record);
    store.event('run_decided', { status: record.status, headSha: record.headSha, workspace });
    return true;
  } catch (err) {
    deps.reporter.warn(`could not record how run ${record.runId} ended before its cleanup: ${errorMessage(err)}`);
    return false;
  }
}


/** As root, a command on a project someone else owns runs as that owner (git refuses another owner's repository). */
function asOwner(owner: { uid: number; gid: number }): string {
  return process.getuid?.() === 0 && owner.uid !== 0 ? `setpriv --reuid=${owner.uid} --regid=${owner.gid} --clear-groups ` : '';
}

/** Runs `fn`; an error it throws leaves with every secret masked in its message. */
async function maskErrors<T>(masker: Masker, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof Error) err.message = masker.mask(err.message);
    throw err;
  }
}

async function push(
  deps: ExecDeps,
  ws: Workspace,
  project: LoadedPipeline['pipeline']['project'],
  record: RunRecord,
  store: RunStore,
): Promise<void> {
  const outcome = await ws.push();
  if (!outcome || !ws.branch) return;
  if (outcome.pushed) {
    record.pushed = true;
    record.push = { remote: outcome.remote };
    deps.reporter.info(`pushed ${ws.branch} to ${outcome.remote}`);
  } else if (outcome.reason === 'push_failed') {
    const hint = pushLaterHint(ws.project, project.remote, ws.branch);
    record.push = { remote: outcome.remote, reason: outcome.reason, error: outcome.error, hint };
    const msg = `push of ${ws.branch} to ${project.remote} failed: ${outcome.error}. The branch is kept locally; push it later with: ${hint}`;
    if (project.push === 'always') {
      if (record.status === 'succeeded') record.status = 'error';
      record.error ??= { code: 'push_failed', message: msg };
    }
    deps.reporter.warn(msg);
  } else if (outcome.reason === 'no_remote_always') {
    const msg = `push: always, but the project ${ws.project} has no remote "${project.remote}": add it (${asOwner(ws.owner)}git -C ${shellWord(ws.project)} remote add ${project.remote} URL) and push the branch (runner push ${record.runId}), or set project.remote or push: auto`;
    record.push = { remote: outcome.remote, reason: 'push_failed', error: `no remote "${project.remote}"` };
    if (record.status === 'succeeded') record.status = 'error';
    record.error ??= { code: 'push_failed', message: msg };
    deps.reporter.warn(msg);
  } else {
    record.push = { reason: outcome.reason };
    if (outcome.reason === 'no_remote') deps.reporter.info(`not pushed: the project has no remote "${project.remote}" (push: auto)`);
  }
  store.event('push', { ...record.push, pushed: record.pushed });
}

/** How long a continuation waits for a run's lock that another process holds (a moment's check, or its run). */
const RESUME_LOCK_MS = 5000;

async function holdOwnerLockWithin(home: string, runId: string, ms: number): Promise<Awaited<ReturnType<typeof holdOwnerLock>>> {
  const until = Date.now() + ms;
  for (;;) {
    try {
      return await holdOwnerLock(home, runId);
    } catch (err) {
      if (Date.now() >= until) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}
