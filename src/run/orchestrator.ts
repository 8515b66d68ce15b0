/**
 * One run of a pipeline, end to end: a worktree on `run/<runId>`, one
 * container per step, a commit after each step, a push, and cleanup that
 * always happens. Dependencies are injected; nothing here is global.
 */
import path from 'node:path';
import { formatSize } from '../common/durations.js';
import { errorMessage, RunnerError } from '../common/errors.js';
import { LineSplitter } from '../common/line-splitter.js';
import { Masker } from '../common/mask.js';
import type { ContainerRuntime } from '../container/runtime.js';
import { LABELS } from '../container/runtime.js';
import type { Git, GitIdentity } from '../git/git.js';
import { pushBranch, pushLaterHint } from '../git/push.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { CONTAINER_PATHS, renderStep, type RunIdentity } from '../plan/render.js';
import { planSteps, resolveUser, secretsNeeded, type StepPlan } from '../plan/step-plan.js';
import {
  commitAll,
  createWorktree,
  headOf,
  removeWorktree,
  resolveBase,
  type GitWorktree,
} from '../workspace/git-worktree.js';
import { RunnerHome } from '../workspace/home.js';
import { inspectProject } from '../workspace/project.js';
import { commitMessage } from './commit-message.js';
import { parseOutputs, readOutputsFile } from './outputs.js';
import type { RunRecord } from './record.js';
import type { Reporter } from './reporter.js';
import { newRunId } from './run-id.js';
import { resolveSecrets } from './secrets.js';
import { classify, describeStatus, type StepResult } from './step-result.js';
import { runContainer } from './step-runner.js';
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
  const projectDir = path.resolve(opts.loaded.dir, pipeline.project.path);
  const project = await inspectProject(deps.makeGit, projectDir);
  const git = deps.makeGit({ uid: project.uid, gid: project.gid });
  const baseSha = await resolveBase(git, project, pipeline.project.base);
  await deps.runtime.ping();
  for (const image of new Set(plans.map((p) => p.image))) {
    await deps.runtime.ensureImage(image, (p) => deps.reporter.pullProgress(image, p));
  }

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
      const result = await runStep({ deps, opts, plan, total: plans.length, wt, git, store, masker, identity, outputs, secrets });
      record.steps.push(result);
      await store.writeRecord(record);
      if (result.status === 'canceled') stopped = true;
      else if (result.status !== 'completed' && !plan.continueOnError) stopped = true;
    }

    record.headSha = await headOf(git, wt);
    const canceled = deps.signal.aborted || record.steps.some((s) => s.status === 'canceled');
    const failed = record.steps.some((s, i) => s.status !== 'completed' && s.status !== 'skipped' && !plans[i]!.continueOnError);
    record.status = canceled ? 'canceled' : failed ? 'failed' : 'succeeded';

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

function skipped(plan: StepPlan): StepResult {
  return { id: plan.id, status: 'skipped', exitCode: null, oomKilled: false, timedOut: false, durationMs: 0, commit: null, outputs: {} };
}

interface StepContext {
  deps: ExecDeps;
  opts: ExecOptions;
  plan: StepPlan;
  total: number;
  wt: GitWorktree;
  git: Git;
  store: RunStore;
  masker: Masker;
  identity: RunIdentity;
  outputs: Map<string, Record<string, string>>;
  secrets: Record<string, string>;
}

async function runStep(c: StepContext): Promise<StepResult> {
  const { deps, plan, wt, store, masker } = c;
  const user = resolveUser(plan.user, wt.project);
  const [uid, gid] = user.split(':').map(Number) as [number, number];
  const ioDir = await store.stepIoDir(plan.id, uid, gid);
  const rendered = renderStep(plan, c.outputs, c.identity, c.secrets);

  deps.reporter.stepStarted({ id: plan.id, index: plan.index, total: c.total, image: plan.image });
  store.event('step_started', { step: plan.id, image: plan.image, user, network: plan.network });
  const startedAt = deps.clock();

  const log = store.stepLog(plan.id);
  const lineTo = (stream: 'stdout' | 'stderr') =>
    new LineSplitter((raw) => {
      const line = masker.mask(raw);
      log.write(`${line}\n`);
      deps.reporter.stepLine(plan.id, stream, line);
    });
  const out = lineTo('stdout');
  const err = lineTo('stderr');

  let end;
  try {
    end = await runContainer(
      deps.runtime,
      {
        name: `runner-${c.identity.runId}-${plan.id}`,
        image: plan.image,
        cmd: rendered.cmd,
        env: rendered.env,
        workingDir: CONTAINER_PATHS.workspace,
        user,
        mounts: [
          { source: wt.path, target: CONTAINER_PATHS.workspace, readOnly: false },
          { source: wt.project.root, target: CONTAINER_PATHS.project, readOnly: true },
          { source: ioDir, target: CONTAINER_PATHS.io, readOnly: false },
        ],
        memoryBytes: plan.memoryBytes,
        cpus: plan.cpus,
        pids: plan.pids,
        network: plan.network,
        labels: {
          [LABELS.runId]: c.identity.runId,
          [LABELS.stepId]: plan.id,
          [LABELS.home]: c.opts.home,
          [LABELS.pipeline]: c.identity.pipeline,
        },
      },
      {
        timeoutMs: plan.timeoutMs,
        signal: deps.signal,
        killSignal: deps.killSignal,
        graceSeconds: c.opts.graceSeconds ?? 5,
        onStdout: (b) => out.push(b),
        onStderr: (b) => err.push(b),
        onCleanupError: (m) => deps.reporter.warn(m),
      },
    );
  } finally {
    out.end();
    err.end();
    await new Promise((r) => log.end(r));
  }

  const status = classify(end.reason, end.exitCode, end.oomKilled);
  const messages: string[] = [];
  if (status === 'oom') messages.push(`killed by the out-of-memory killer at its memory limit of ${formatSize(plan.memoryBytes)} (raise resources.memory)`);
  if (status === 'timed_out') messages.push(`stopped at its timeout of ${Math.round(plan.timeoutMs / 1000)}s (raise timeout)`);

  const read = await readOutputsFile(path.join(ioDir, 'output'));
  const parsed = read.text !== undefined ? parseOutputs(read.text) : { values: {}, problems: [] };
  if (read.problem) messages.push(read.problem);
  for (const p of parsed.problems) messages.push(`outputs: ${p}`);
  const declared = Object.fromEntries(Object.entries(parsed.values).filter(([k]) => plan.outputs.includes(k) || k === 'summary'));
  c.outputs.set(plan.id, declared);

  const commit = await commitAll(
    c.git,
    wt,
    masker.mask(
      commitMessage({
        runId: c.identity.runId,
        stepId: plan.id,
        actor: plan.agent ?? plan.image,
        status,
        exitCode: end.exitCode,
        ...(declared.summary !== undefined ? { summary: declared.summary } : {}),
      }),
    ),
  );

  const result: StepResult = {
    id: plan.id,
    status,
    exitCode: end.exitCode,
    oomKilled: end.oomKilled,
    timedOut: end.reason === 'timeout',
    durationMs: end.durationMs,
    startedAt: startedAt.toISOString(),
    finishedAt: deps.clock().toISOString(),
    commit: commit ?? null,
    outputs: Object.fromEntries(Object.entries(declared).map(([k, v]) => [k, masker.mask(v)])),
    ...(messages.length ? { message: masker.mask(messages.join('; ')) } : {}),
  };
  store.event('step_finished', { step: plan.id, status: describeStatus(status, end.exitCode), exitCode: end.exitCode, commit: result.commit, durationMs: end.durationMs });
  deps.reporter.stepFinished(result);
  return result;
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
      record.status = 'error';
      record.error = { code: 'push_failed', message: msg };
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
