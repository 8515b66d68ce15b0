/**
 * One run of a pipeline, end to end: a worktree on `run/<runId>`, one
 * container per step, a commit after each step, a push, and cleanup that
 * always happens. Dependencies are injected; nothing here is global.
 */
import path from 'node:path';
import { errorMessage, RunnerError } from '../common/errors.js';
import { Masker } from '../common/mask.js';
import { LABELS, type ContainerRuntime } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { pushBranch, pushLaterHint } from '../git/push.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import type { RunIdentity } from '../plan/render.js';
import { planSteps, secretsNeeded, type StepPlan } from '../plan/step-plan.js';
import { createWorktree, headOf, removeWorktree, resolveBase, type GitWorktree } from '../workspace/git-worktree.js';
import { RunnerHome } from '../workspace/home.js';
import { inspectProject } from '../workspace/project.js';
import type { RunRecord } from './record.js';
import type { Reporter } from './reporter.js';
import { newRunId } from './run-id.js';
import { resolveSecrets } from './secrets.js';
import { runStep } from './run-step.js';
import type { StepResult } from './step-result.js';
import { RunStore } from './store.js';

export interface ExecDeps {
  runtime: ContainerRuntime;
  makeGit: (who: GitIdentity) => Git;
  clock: () => Date;
  reporter: Reporter;
  /** polite cancel (Ctrl-C): stop the step with a grace period, commit, clean up */
  signal: AbortSignal;
  /** impatient cancel (second Ctrl-C): kill the step's container at once */
  killSignal: AbortSignal;
}

export interface ExecOptions {
  loaded: LoadedPipeline;
  home: string;
  keepWorkspace: boolean;
  /** where secrets are read from (the runner's environment) */
  secretSource: Readonly<Record<string, string | undefined>>;
  /** seconds between SIGTERM and SIGKILL when a step is stopped */
  graceSeconds?: number;
}

export async function executeRun(deps: ExecDeps, opts: ExecOptions): Promise<RunRecord> {
  const { pipeline } = opts.loaded;
  const plans = planSteps(pipeline);

  // Everything that can be checked before a run exists is checked here, so a
  // bad project, a missing secret or an unreachable engine leaves nothing behind.
  const secrets = resolveSecrets(secretsNeeded(plans), opts.secretSource);
  const masker = new Masker(Object.values(secrets));
  const { project, git, baseSha } = await maskErrors(masker, async () => {
    const projectDir = path.resolve(opts.loaded.dir, pipeline.project.path);
    const project = await inspectProject(deps.makeGit, projectDir);
    const git = deps.makeGit({ uid: project.uid, gid: project.gid });
    const baseSha = await resolveBase(git, project, pipeline.project.base);
    await deps.runtime.ping();
    for (const image of new Set(plans.map((p) => p.image))) {
      await deps.runtime.ensureImage(image, (p) => deps.reporter.pullProgress(image, p));
    }
    return { project, git, baseSha };
  });

  const home = new RunnerHome(opts.home);
  await home.ensure();
  const runId = newRunId(deps.clock());
  const store = await RunStore.create(home.runs, runId, masker);
  const startedAt = deps.clock();
  const record: RunRecord = {
    runId,
    pipeline: pipeline.name,
    pipelineFile: path.resolve(opts.loaded.file),
    project: project.root,
    workspace: 'git_worktree',
    worktree: path.join(home.worktrees, runId),
    branch: `run/${runId}`,
    baseSha,
    headSha: null,
    status: 'running',
    startedAt: startedAt.toISOString(),
    finishedAt: null,
    durationMs: null,
    pushed: false,
    push: null,
    keptWorkspace: opts.keepWorkspace,
    pid: process.pid,
    steps: [],
    error: null,
  };
  await store.writeRecord(record);
  store.event('run_started', { runId, pipeline: pipeline.name, project: project.root, baseSha });

  let wt: GitWorktree | undefined;
  try {
    wt = await createWorktree(git, project, home.worktrees, runId, baseSha);
    record.worktree = wt.path;
    await store.writeRecord(record);
    deps.reporter.runStarted(record, plans.map((p) => p.id));

    const identity: RunIdentity = { runId, pipeline: pipeline.name, branch: wt.branch, baseSha, attempt: 1 };
    const outputs = new Map<string, Record<string, string>>();
    let stopped = false;
    for (const plan of plans) {
      if (stopped || deps.signal.aborted) {
        record.steps.push(skipped(plan));
        continue;
      }
      const result = await runStep({
        deps,
        home: opts.home,
        graceSeconds: opts.graceSeconds ?? 5,
        plan,
        total: plans.length,
        wt,
        git,
        store,
        masker,
        identity,
        outputs,
        secrets,
      });
      record.steps.push(result);
      await store.writeRecord(record);
      if (result.status === 'canceled' || result.error) stopped = true;
      else if (result.status !== 'completed' && !plan.continueOnError) stopped = true;
    }

    record.headSha = await headOf(git, wt);
    const canceled = deps.signal.aborted || record.steps.some((s) => s.status === 'canceled');
    const failed = record.steps.some((s, i) => s.status !== 'completed' && s.status !== 'skipped' && !plans[i]!.continueOnError);
    record.status = canceled ? 'canceled' : failed ? 'failed' : 'succeeded';
    const refused = record.steps.find((s) => s.error);
    if (refused) {
      record.status = 'failed';
      record.error = { code: refused.error!, message: refused.message ?? refused.error! };
    }

    if (!canceled) await push(deps, pipeline.project, git, wt, record, store);
  } catch (err) {
    record.status = deps.signal.aborted ? 'canceled' : 'error';
    record.error = { code: err instanceof RunnerError ? err.code : 'internal', message: masker.mask(errorMessage(err)) };
    store.event('run_error', record.error, 'error');
  } finally {
    await cleanup(deps, opts, record, wt, git, store);
    const finishedAt = deps.clock();
    record.finishedAt = finishedAt.toISOString();
    record.durationMs = finishedAt.getTime() - startedAt.getTime();
    await store.writeRecord(record);
    store.event('run_finished', { status: record.status, headSha: record.headSha, pushed: record.pushed });
    await store.close();
  }
  deps.reporter.runFinished(record);
  return record;
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

function skipped(plan: StepPlan): StepResult {
  return { id: plan.id, status: 'skipped', exitCode: null, oomKilled: false, timedOut: false, durationMs: 0, commit: null, outputs: {}, limits: [] };
}

async function push(
  deps: ExecDeps,
  project: LoadedPipeline['pipeline']['project'],
  git: Git,
  wt: GitWorktree,
  record: RunRecord,
  store: RunStore,
): Promise<void> {
  const outcome = await pushBranch(git, wt.project, project.remote, wt.branch, project.push);
  if (outcome.pushed) {
    record.pushed = true;
    record.push = { remote: outcome.remote };
    deps.reporter.info(`pushed ${wt.branch} to ${outcome.remote}`);
  } else if (outcome.reason === 'push_failed') {
    const hint = pushLaterHint(wt.project, project.remote, wt.branch);
    record.push = { remote: outcome.remote, reason: outcome.reason, error: outcome.error, hint };
    const msg = `push of ${wt.branch} to ${project.remote} failed: ${outcome.error}. The branch is kept locally; push it later with: ${hint}`;
    if (project.push === 'always') {
      if (record.status === 'succeeded') record.status = 'error';
      record.error ??= { code: 'push_failed', message: msg };
    }
    deps.reporter.warn(msg);
  } else {
    record.push = { reason: outcome.reason };
    if (outcome.reason === 'no_remote') deps.reporter.info(`not pushed: the project has no remote "${project.remote}" (push: auto)`);
  }
  store.event('push', { ...record.push, pushed: record.pushed });
}

async function cleanup(
  deps: ExecDeps,
  opts: ExecOptions,
  record: RunRecord,
  wt: GitWorktree | undefined,
  git: Git,
  store: RunStore,
): Promise<void> {
  // No container of this run may outlive it, whatever happened above.
  try {
    await deps.runtime.removeByLabels({ [LABELS.runId]: record.runId, [LABELS.home]: opts.home });
  } catch (err) {
    deps.reporter.warn(`could not check for leftover containers of run ${record.runId}: ${errorMessage(err)}`);
  }
  if (!wt) return;
  const unsaved = record.steps.find((s) => s.error === 'commit_failed' && !s.patch);
  if (unsaved) {
    record.keptWorkspace = true;
    deps.reporter.warn(`step ${unsaved.id}'s work could not be committed nor saved as a patch: the worktree is kept at ${wt.path}`);
    return;
  }
  if (opts.keepWorkspace) {
    deps.reporter.info(`workspace kept at ${wt.path} (remove it with: git -C ${wt.project.root} worktree remove --force ${wt.path})`);
    return;
  }
  try {
    await removeWorktree(git, wt);
    store.event('worktree_removed', { path: wt.path });
  } catch (err) {
    deps.reporter.warn(`could not remove the worktree ${wt.path}: ${errorMessage(err)}`);
  }
}
