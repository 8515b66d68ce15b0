/**
 * Recovery after a crash, run first by every command that touches runs:
 *  - a run recorded as running whose owner process is gone (owner-lock.ts) is
 *    marked `interrupted`; whatever its last step left is committed as such
 *    (or saved as a patch when its git files were tampered with); a per-run
 *    worktree is then removed and pruned, a task worktree kept; a lane
 *    worktree that was being removed is removed, nothing of it committed;
 *  - a run whose outcome was decided and whose cleanup was cut short
 *    (record.cleanup) keeps its status; its cleanup is finished
 *    (cleanup-recovery.ts), nothing committed;
 *  - a run directory without a record whose owner is gone is removed
 *    (recordless-dirs.ts);
 *  - every container labelled with this runner home whose run is not live is
 *    removed.
 * A live run of another process is never touched.
 */
import path from 'node:path';
import { visibleBytes } from '../common/visible.js';
import { errorMessage } from '../common/errors.js';
import { LABELS, type ContainerRuntime } from '../container/runtime.js';
import { removeDeadWarmGateways } from '../gateway/host/gateway-pool.js';
import { removeDeadWarmStepDirs } from './warm/warm-steps.js';
import { warmStepsDir } from './warm/warm-pool.js';
import type { Git, GitIdentity } from '../git/git.js';
import { tryLock } from '../common/kernel-lock.js';
import { commitAll, diffToFile, headOf, removeWorktree, repositoryFilters, savePatch, type GitWorktree } from '../workspace/git-worktree.js';
import { taskLockKey } from '../workspace/task-worktree.js';
import type { RunnerHome } from '../workspace/home.js';
import { inspectProject } from '../workspace/project.js';
import { commitMessage } from './commit-message.js';
import type { RunningStep, RunRecord } from './record.js';
import type { StepResult } from './step-result.js';
import { listRuns, readRun, writeRun } from './records.js';
import { ownerAlive, tryOwnerLock } from './owner-lock.js';
import { finishCleanup, projectGit, removeHalfCleaned } from './cleanup-recovery.js';
import { removeRecordlessDirs } from './recordless-dirs.js';

export interface ReconcileDeps {
  runtime: ContainerRuntime | undefined;
  /** where the engine's step gateways run, when not on `runtime` (a swarm's manager, whose containers its services do not show) */
  gateways?: ContainerRuntime | undefined;
  makeGit: (who: GitIdentity) => Git;
  clock: () => Date;
  say: (message: string) => void;
}

export interface ReconcileReport {
  interrupted: string[];
  /** runs that had ended when their runner died during cleanup: the cleanup finished, the outcome kept */
  cleanedUp: string[];
  /** run directories without a record, removed */
  dirsRemoved: number;
  containersRemoved: number;
  /** every run record, as it is after recovery, newest first */
  runs: RunRecord[];
}

export async function reconcile(deps: ReconcileDeps, home: RunnerHome): Promise<ReconcileReport> {
  const runs = await listRuns(home.runs);
  const report: ReconcileReport = { interrupted: [], cleanedUp: [], dirsRemoved: 0, containersRemoved: 0, runs };
  // one listing of the home's containers (every command that touches runs starts here)
  let containers: Array<{ labels: Record<string, string> }> | undefined;
  if (deps.runtime) {
    try {
      containers = await deps.runtime.listByLabels({ [LABELS.home]: home.root });
      // first, the warm gateways and warm step containers of a runner that died: a step that had claimed one carries
      // no run's label, so a run's recovery below would not stop it, and it could still write to the worktree
      // recovery commits. They are where the engine's gateways are: on a swarm, its manager, whose containers a
      // swarm's listing (its services) does not show; asked there
      const gateways = deps.gateways ?? deps.runtime;
      report.containersRemoved += await removeDeadWarmGateways(gateways, home.root, undefined, gateways === deps.runtime ? containers : undefined);
      // and then the directories their step containers mounted (empty, or a claimed one's, whose worktree took its place)
      await removeDeadWarmStepDirs(warmStepsDir(home.root));
    } catch (err) {
      deps.say(`could not look for leftover containers: ${errorMessage(err)}`);
    }
  }
  for (const [i, listed] of runs.entries()) {
    if (listed.status !== 'running' && !listed.cleanup) continue;
    // Holding the dead run's owner lock while recovering it: a live owner, or
    // another process recovering it at the same moment, makes this one skip it.
    const held = await tryOwnerLock(home.root, listed.runId);
    if (!held) continue;
    try {
      const rec = await readRun(home.runs, listed.runId);
      if (rec.cleanup) {
        await finishRun(deps, home, rec);
        report.cleanedUp.push(rec.runId);
      } else if (rec.status === 'running') {
        await recoverRun(deps, home, rec);
        report.interrupted.push(rec.runId);
      }
      runs[i] = rec;
    } finally {
      await held.release();
    }
  }
  report.dirsRemoved = await removeRecordlessDirs(home.root, home.runs, deps.say);
  if (deps.runtime && containers) {
    try {
      report.containersRemoved += await removeOrphanContainers(deps.runtime, home.root, containers);
    } catch (err) {
      deps.say(`could not look for leftover containers: ${errorMessage(err)}`);
    }
  }
  if (report.containersRemoved) deps.say(`removed ${report.containersRemoved} container(s) left by runs that are gone`);
  return report;
}

/** Removes every container of this home whose run is not live. */
export async function removeOrphanContainers(runtime: ContainerRuntime, home: string, listed?: ReadonlyArray<{ labels: Record<string, string> }>): Promise<number> {
  let removed = 0;
  for (const c of listed ?? (await runtime.listByLabels({ [LABELS.home]: home }))) {
    const runId = c.labels[LABELS.runId];
    // a container of no run (a warm gateway: removeDeadWarmGateways's) is not a run's to remove
    if (!runId || (await ownerAlive(home, runId))) continue;
    removed += await runtime.removeByLabels({ [LABELS.home]: home, [LABELS.runId]: runId });
  }
  return removed;
}

/** The containers and networks of a run whose runner is gone. */
async function removeRunContainers(deps: ReconcileDeps, home: RunnerHome, rec: RunRecord, notes: string[]): Promise<void> {
  if (!deps.runtime) return;
  await deps.runtime.removeByLabels({ [LABELS.home]: home.root, [LABELS.runId]: rec.runId }).catch((err) => {
    notes.push(`its container could not be removed: ${errorMessage(err)}`);
  });
  // its steps' gateway networks (their gateways went with the containers above)
  await deps.runtime.removeNetworksByLabels({ [LABELS.home]: home.root, [LABELS.runId]: rec.runId }).catch((err) => {
    notes.push(`its steps' networks could not be removed: ${errorMessage(err)}`);
  });
}

/** A run that had ended, its cleanup cut short: finished, its status kept, nothing committed. */
async function finishRun(deps: ReconcileDeps, home: RunnerHome, rec: RunRecord): Promise<void> {
  const notes: string[] = [];
  await removeRunContainers(deps, home, rec, notes);
  const done = await finishCleanup(deps.makeGit, home, rec, notes);
  await writeRun(home.runs, rec);
  deps.say(`run ${rec.runId} had ended (${rec.status}) when its runner stopped during its cleanup: the cleanup is finished, nothing committed${done ? ` (${done})` : ''}`);
}

async function recoverRun(deps: ReconcileDeps, home: RunnerHome, rec: RunRecord): Promise<void> {
  const notes: string[] = [];
  await removeRunContainers(deps, home, rec, notes);
  const step = rec.current;
  const now = deps.clock().toISOString();
  // Every step that was running (several when steps ran at once) is marked interrupted.
  const running = rec.running?.length ? rec.running : step ? [{ id: step.id, name: step.id, startedAt: step.startedAt }] : [];
  for (const r of running) rec.steps.push(interruptedStep(r, now));
  // Every open lane (running, waiting to retry, waiting for its merge): leftovers committed on its branch, which is kept; its worktree goes.
  const open = [...(rec.lanes ?? []).map((l) => ({ name: running.find((r) => r.lane?.worktree === l.worktree)?.name ?? l.key, lane: l }))];
  for (const r of running) if (r.lane && !open.some((o) => o.lane.worktree === r.lane!.worktree)) open.push({ name: r.name, lane: { key: r.name, ...r.lane } });
  for (const r of open) {
    const lane = r.lane;
    if ('removing' in lane && lane.removing) {
      // its work was settled (merged, or its branch kept) before its worktree was being taken apart: nothing of it is committed
      try {
        const repo = await projectGit(deps.makeGit, rec, notes);
        await removeHalfCleaned(repo, home.worktrees, lane.worktree);
        const left = await repo?.git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${lane.branch}`], { cwd: repo.project.root, gitDir: repo.project.commonDir, allowFail: true });
        if (left?.code === 0) {
          rec.flow ??= { routes: [], stop: null, keptBranches: [] };
          if (!rec.flow.keptBranches.includes(lane.branch)) rec.flow.keptBranches.push(lane.branch);
        }
      } catch (err) {
        notes.push(`the lane worktree ${lane.worktree} could not be removed: ${errorMessage(err)}`);
      }
      continue;
    }
    try {
      const project = await inspectProject(deps.makeGit, rec.project);
      const git = deps.makeGit({ uid: project.uid, gid: project.gid });
      const wt: GitWorktree = { name: path.basename(lane.worktree), path: lane.worktree, branch: lane.branch, baseSha: '', ...lane.recovery, filterNames: await repositoryFilters(git, project), project };
      const { commit, notAdded } = await commitAll(git, wt, commitMessage({ runId: rec.runId, stepId: r.name, actor: 'runner', status: 'interrupted', exitCode: null }));
      const entry = rec.steps.find((s) => s.status === 'interrupted' && (s.name ?? s.id) === r.name);
      if (entry) entry.commit = commit ?? null;
      // what git refused or could not read stays where it is, said
      if (notAdded.length) notes.push(`${notAdded.length} path(s) of the leftovers of ${r.name} are on no commit (${notAdded.slice(0, 3).map(visibleBytes).join(', ')}): its worktree is kept at ${lane.worktree}`);
      else await removeWorktree(git, wt);
    } catch (err) {
      notes.push(`the leftovers of ${r.name} (${lane.worktree}) could not be recovered: ${errorMessage(err)}`);
    }
    rec.flow ??= { routes: [], stop: null, keptBranches: [] };
    if (!rec.flow.keptBranches.includes(lane.branch)) rec.flow.keptBranches.push(lane.branch);
  }
  const mainStep = running.find((r) => !r.lane);
  if (rec.recovery && rec.worktree && rec.branch && rec.baseSha) {
    try {
      const project = await inspectProject(deps.makeGit, rec.project);
      const git = deps.makeGit({ uid: project.uid, gid: project.gid });
      const wt: GitWorktree = {
        name: path.basename(rec.worktree),
        path: rec.worktree,
        branch: rec.branch,
        baseSha: rec.baseSha,
        ...rec.recovery,
        filterNames: await repositoryFilters(git, project),
        project,
      };
      const result = mainStep ? rec.steps.find((s) => s.status === 'interrupted' && (s.name ?? s.id) === mainStep.name) : undefined;
      // A task another run now holds is that run's: its files are not this run's leftovers.
      const taskLock = rec.taskId ? await tryLock('workspace', taskLockKey(home.tasks, rec.taskId)) : undefined;
      if (rec.taskId && !taskLock) {
        notes.push(`task ${rec.taskId} is in use by another run: nothing was committed for this one`);
      } else try {
        const { commit, notAdded } = await commitAll(
          git,
          wt,
          commitMessage({ runId: rec.runId, stepId: mainStep?.name ?? 'recovery', actor: 'runner', status: 'interrupted', exitCode: null }),
        );
        if (result) result.commit = commit ?? null;
        if (notAdded.length) {
          // what git refused or could not read stays where it is, said
          rec.keptWorkspace = true;
          notes.push(`${notAdded.length} path(s) of its leftovers are on no commit (${notAdded.slice(0, 3).map(visibleBytes).join(', ')}): the worktree is kept at ${rec.worktree}`);
        }
      } catch (err) {
        const patch = path.join(home.runs, rec.runId, 'steps', `${mainStep?.name ?? 'recovery'}.patch`);
        const saved = await savePatch(git, wt, patch).catch(() => undefined);
        notes.push(`its leftovers could not be committed (${errorMessage(err)})${saved?.saved ? `; saved in ${patch}${saved.keptAt ? ` and ${saved.keptAt}` : ''}` : ''}`);
      } finally {
        await taskLock?.release();
      }
      rec.headSha = await headOf(git, wt);
      await diffToFile(git, project, rec.baseSha, rec.headSha, path.join(home.runs, rec.runId, 'diff.patch')).catch(() => undefined);
      if (rec.workspace === 'git_worktree' && !rec.keptWorkspace) await removeWorktree(git, wt);
    } catch (err) {
      notes.push(`its worktree could not be recovered: ${errorMessage(err)}`);
    }
  }
  rec.status = 'interrupted';
  rec.current = null;
  rec.running = [];
  rec.lanes = [];
  rec.finishedAt = now;
  rec.durationMs = Date.parse(now) - Date.parse(rec.startedAt);
  rec.error = {
    code: 'interrupted',
    message: [`the runner (pid ${rec.pid}) stopped during the run; recovered at ${now}`, ...notes].join('; '),
  };
  await writeRun(home.runs, rec);
  const committed = [...new Set([...running.map((r) => r.name), ...open.filter((o) => !('removing' in o.lane && o.lane.removing)).map((o) => o.name)])];
  deps.say(`run ${rec.runId} was interrupted (its runner is gone): marked interrupted${committed.length ? `, the leftovers of ${committed.join(', ')} committed` : ''}`);
}

/**
 * The record of a step a dead runner left running: interrupted, its lane's work not merged; an agent step says it is
 * one (its leftovers are committed on the run's branch, so the steps a resume runs come after an agent's). Pure.
 */
export function interruptedStep(r: Pick<RunningStep, 'id' | 'name' | 'startedAt' | 'isolation' | 'agent' | 'lane'>, now: string): StepResult {
  return {
    id: r.id,
    ...(r.name !== r.id ? { name: r.name } : {}),
    status: 'interrupted',
    exitCode: null,
    oomKilled: false,
    timedOut: false,
    durationMs: Date.parse(now) - Date.parse(r.startedAt),
    startedAt: r.startedAt,
    finishedAt: now,
    commit: null,
    outputs: {},
    limits: [],
    ...(r.isolation ? { isolation: r.isolation } : {}),
    ...(r.agent ? { agent: r.agent } : {}),
    ...(r.lane ? { lane: { branch: r.lane.branch, merge: 'not_merged' as const } } : {}),
  };
}
