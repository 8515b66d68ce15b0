/**
 * One step of a run: hand the worktree to the step's user, check the mount
 * sources, run the container, read its outputs, and commit what it left
 * (or, when it tampered with the worktree's git files, save it as a patch).
 */
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { formatSize } from '../common/durations.js';
import { errorMessage, WorkspaceError } from '../common/errors.js';
import { LineSplitter } from '../common/line-splitter.js';
import type { Masker } from '../common/mask.js';
import { LABELS, type ContainerSpec, type Mount } from '../container/runtime.js';
import type { Git } from '../git/git.js';
import { CONTAINER_PATHS, renderStep, type RunIdentity } from '../plan/render.js';
import { resolveUser, type StepPlan } from '../plan/step-plan.js';
import { commitAll, savePatch, verifyGitLinks, verifyWorktreeDir, type GitWorktree } from '../workspace/git-worktree.js';
import { verifyDirectory } from '../workspace/names.js';
import { handOver } from '../workspace/ownership.js';
import { commitMessage } from './commit-message.js';
import type { ExecDeps } from './orchestrator.js';
import { parseOutputs, readOutputsFile } from './outputs.js';
import { classify, describeStatus, limitsHit, type StepResult } from './step-result.js';
import { runContainer } from './step-runner.js';
import type { RunStore } from './store.js';

export interface StepContext {
  deps: ExecDeps;
  home: string;
  graceSeconds: number;
  plan: StepPlan;
  total: number;
  wt: GitWorktree;
  git: Git;
  store: RunStore;
  masker: Masker;
  identity: RunIdentity;
  /** outputs of the steps that ran so far, by step id */
  outputs: Map<string, Record<string, string>>;
  secrets: Record<string, string>;
}

export async function runStep(c: StepContext): Promise<StepResult> {
  const { deps, plan, wt, store, masker } = c;
  const user = resolveUser(plan.user, wt.project);
  const ioDir = await store.stepIoDir(plan.id, user.uid, user.gid);
  // A step running as someone other than the project's owner gets the worktree
  // for its run; commitAll hands it back before host git reads it.
  await verifyGitLinks(wt);
  if (user.uid !== wt.project.uid || user.gid !== wt.project.gid) {
    await handOver(wt.path, user.uid, user.gid, { recursive: true, skip: ['.git'] });
  }
  const rendered = renderStep(plan, c.outputs, c.identity, c.secrets);

  deps.reporter.stepStarted({ id: plan.id, index: plan.index, total: c.total, image: plan.image });
  store.event('step_started', { step: plan.id, image: plan.image, user: `${user.uid}:${user.gid}`, network: plan.network });
  const startedAt = deps.clock();

  const log = store.stepLog(plan.id);
  const lineTo = (stream: 'stdout' | 'stderr') =>
    new LineSplitter((raw) => {
      const line = masker.mask(raw);
      log.line(line);
      deps.reporter.stepLine(plan.id, stream, line);
    });
  const out = lineTo('stdout');
  const err = lineTo('stderr');

  // The mount sources are checked again right before the container is made:
  // still the directories the runner created, not swapped for a symlink.
  await verifyWorktreeDir(wt);
  await verifyDirectory(ioDir);
  let end;
  try {
    end = await runContainer(deps.runtime, containerSpec(c, rendered, user, ioDir), {
      timeoutMs: plan.timeoutMs,
      signal: deps.signal,
      killSignal: deps.killSignal,
      graceSeconds: c.graceSeconds,
      onStdout: (b) => {
        out.push(b);
        return deps.reporter.backpressure?.();
      },
      onStderr: (b) => {
        err.push(b);
        return deps.reporter.backpressure?.();
      },
      onCleanupError: (m) => deps.reporter.warn(m),
    });
  } finally {
    out.end();
    err.end();
    log.close();
  }

  const status = classify(end.reason, end.exitCode, end.oomKilled);
  const limits = limitsHit({ status, exitCode: end.exitCode, ...(end.pidsLimitHits !== undefined ? { pidsLimitHits: end.pidsLimitHits } : {}) });
  const limitText = limits.map((l) => describeLimit(l, plan));
  const messages = [...limitText];

  const read = await readOutputsFile(path.join(ioDir, 'output'));
  // The raw file may hold secrets; only the masked values are kept, in run.json.
  await rm(ioDir, { recursive: true, force: true });
  const parsed = read.text !== undefined ? parseOutputs(read.text) : { values: {}, problems: [] };
  if (read.problem) messages.push(read.problem);
  for (const p of parsed.problems) messages.push(`outputs: ${p}`);
  const kept = Object.fromEntries(Object.entries(parsed.values).filter(([k]) => plan.outputs.includes(k) || k === 'summary'));
  c.outputs.set(plan.id, kept);

  const result: StepResult = {
    id: plan.id,
    status,
    exitCode: end.exitCode,
    oomKilled: end.oomKilled,
    timedOut: end.reason === 'timeout',
    durationMs: end.durationMs,
    startedAt: startedAt.toISOString(),
    finishedAt: deps.clock().toISOString(),
    commit: null,
    outputs: Object.fromEntries(Object.entries(kept).map(([k, v]) => [k, masker.mask(v)])),
    limits,
  };

  try {
    const message = commitMessage({
      runId: c.identity.runId,
      stepId: plan.id,
      actor: plan.agent ?? plan.image,
      status,
      exitCode: end.exitCode,
      limits: limitText,
      ...(kept.summary !== undefined ? { summary: kept.summary } : {}),
    });
    result.commit = (await commitAll(c.git, wt, masker.mask(message))) ?? null;
  } catch (e) {
    // The step's work could not be committed: it is saved as a patch, never lost.
    const tampered = e instanceof WorkspaceError && e.code === 'workspace_tampered';
    if (tampered) result.status = 'failed';
    result.error = tampered ? 'workspace_tampered' : 'commit_failed';
    messages.unshift(tampered ? errorMessage(e) : `its work could not be committed: ${errorMessage(e)}`);
    const patch = store.stepPatchPath(plan.id);
    try {
      if (await savePatch(c.git, wt, patch)) {
        result.patch = patch;
        messages.push(`its work is saved in ${patch}`);
      }
    } catch (pe) {
      messages.push(`its work could not be saved as a patch: ${errorMessage(pe)}`);
    }
  }

  if (messages.length) result.message = masker.mask(messages.join('; '));
  store.event('step_finished', {
    step: plan.id,
    status: describeStatus(result.status, end.exitCode),
    exitCode: end.exitCode,
    commit: result.commit,
    limits,
    durationMs: end.durationMs,
    ...(result.error ? { error: result.error } : {}),
  });
  deps.reporter.stepFinished(result);
  return result;
}

function containerSpec(
  c: StepContext,
  rendered: { cmd: string[]; env: Record<string, string> },
  user: { uid: number; gid: number },
  ioDir: string,
): ContainerSpec {
  const { plan, wt } = c;
  const mounts: Mount[] = [
    { source: wt.path, target: CONTAINER_PATHS.workspace, readOnly: false },
    { source: wt.project.root, target: CONTAINER_PATHS.project, readOnly: true },
    { source: ioDir, target: CONTAINER_PATHS.io, readOnly: false },
  ];
  // The worktree's .git names the project's git directory by its host path:
  // mounted there read-only, `git status`, `git diff` and `git log` work in
  // the step while nothing of the repository can be written.
  if (gitDirMountable(wt.project.commonDir)) {
    mounts.push({ source: wt.project.commonDir, target: wt.project.commonDir, readOnly: true });
  }
  return {
    name: `runner-${c.identity.runId}-${plan.id}`,
    image: plan.image,
    cmd: rendered.cmd,
    env: rendered.env,
    workingDir: CONTAINER_PATHS.workspace,
    user: `${user.uid}:${user.gid}`,
    mounts,
    memoryBytes: plan.memoryBytes,
    cpus: plan.cpus,
    pids: plan.pids,
    openFiles: plan.openFiles,
    fileSizeBytes: plan.fileSizeBytes,
    readOnlyRoot: plan.readOnlyRoot,
    capAdd: plan.capAdd,
    network: plan.network,
    labels: {
      [LABELS.runId]: c.identity.runId,
      [LABELS.stepId]: plan.id,
      [LABELS.home]: c.home,
      [LABELS.pipeline]: c.identity.pipeline,
    },
  };
}

const SYSTEM_DIRS = ['/bin', '/dev', '/etc', '/lib', '/lib64', '/proc', '/sbin', '/sys', '/usr', '/home/agent'];

function gitDirMountable(dir: string): boolean {
  return path.isAbsolute(dir) && !SYSTEM_DIRS.some((s) => dir === s || dir.startsWith(`${s}/`));
}

function describeLimit(limit: ReturnType<typeof limitsHit>[number], plan: StepPlan): string {
  switch (limit) {
    case 'memory':
      return `oom: killed at its memory limit of ${formatSize(plan.memoryBytes)} (raise resources.memory)`;
    case 'timeout':
      return `timed out: stopped at its timeout of ${Math.round(plan.timeoutMs / 1000)}s (raise timeout)`;
    case 'pids':
      return `pids limit reached: forks were refused at ${plan.pids} processes (raise resources.pids)`;
    case 'file_size':
      return `file size limit reached: a write past ${formatSize(plan.fileSizeBytes)} was refused (raise resources.file_size)`;
  }
}
