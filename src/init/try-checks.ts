/**
 * Runs the trial of a starter's checks (trial.ts) as a run of the runner's
 * own: a worktree of the project's current commit, one step in the sandbox a
 * verify step gets (its image, limits, isolation, egress through a gateway,
 * caches, the company CA and mirrors of the settings), its output shown as it
 * comes. The run is kept in the runner home like any other (its log is the
 * evidence for the starter's comments); its branch, which holds nothing, goes.
 */
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import { openEngine } from '../container/engine.js';
import { Git } from '../git/git.js';
import type { LoadedPipeline } from '../pipeline/load.js';
import { parsePipeline } from '../pipeline/parse.js';
import { executeRun, type ExecDeps } from '../run/orchestrator.js';
import type { RunRecord, StartedBy } from '../run/record.js';
import type { Reporter } from '../run/reporter.js';
import { describeStatus } from '../run/step-result.js';
import type { RunSettings } from '../settings/run-settings.js';
import { inspectProject } from '../workspace/project.js';
import type { Detected } from './detect.js';
import { readTrial, TRIAL_STEP, trialPipeline, type TrialOutcome } from './trial.js';

export interface TrialRun {
  /** the project's folder */
  dir: string;
  detected: Detected;
  /** the starter proposes image: devcontainer: the checks are tried in the dev container */
  devcontainer?: boolean;
  home: string;
  settings: RunSettings;
  reporter: Reporter;
  startedBy?: StartedBy;
  signal: AbortSignal;
  killSignal: AbortSignal;
}

export async function tryChecks(t: TrialRun): Promise<TrialOutcome> {
  const text = `${JSON.stringify(trialPipeline(t.detected, { devcontainer: t.devcontainer === true }), null, 2)}\n`;
  // named as a file in the project (none is written): the pipeline's project.path "." is the project
  const file = path.join(t.dir, '(runner init trial)');
  const loaded: LoadedPipeline = { file, dir: t.dir, pipeline: parsePipeline(text, file), text };
  const engine = openEngine(t.settings.engine.name, t.settings.engine);
  const deps: ExecDeps = { ...engine, makeGit: (who) => new Git(who), clock: () => new Date(), reporter: t.reporter, signal: t.signal, killSignal: t.killSignal };
  const record = await executeRun(deps, { loaded, home: t.home, keepWorkspace: false, secretSource: {}, settings: t.settings, ...(t.startedBy ? { startedBy: t.startedBy } : {}) });
  await dropEmptyBranch(t.dir, record);
  const step = record.steps.find((s) => s.id === TRIAL_STEP);
  if (!record.baseSha || step?.status !== 'completed') {
    const why = step ? `its step ${describeStatus(step.status, step.exitCode)}${step.message ? `: ${step.message}` : ''}` : (record.error?.message ?? `it ended ${record.status}`);
    throw new RunnerError('trial_failed', `the trial run ${record.runId} could not try the checks (${why}; runner runs show ${record.runId})`);
  }
  return readTrial(t.detected, { commit: record.baseSha, runId: record.runId, outputs: step.outputs });
}

/** The trial's branch holds nothing of its own (its step cleans up): it goes, unless something was committed on it after all. */
async function dropEmptyBranch(dir: string, record: RunRecord): Promise<void> {
  if (!record.branch || !record.baseSha || record.headSha !== record.baseSha) return;
  const project = await inspectProject((who) => new Git(who), dir).catch(() => undefined);
  if (!project) return;
  const git = new Git({ uid: project.uid, gid: project.gid });
  // only while it still points at the base: update-ref refuses otherwise
  await git.run(['update-ref', '-d', `refs/heads/${record.branch}`, record.baseSha], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
}
