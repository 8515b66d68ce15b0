/** The run record written to `runs/<runId>/run.json`. */
import type { StepResult } from './step-result.js';

export type RunStatus = 'running' | 'succeeded' | 'failed' | 'canceled' | 'error';

export interface RunRecord {
  runId: string;
  pipeline: string;
  pipelineFile: string;
  project: string;
  workspace: 'git_worktree';
  worktree: string;
  branch: string;
  baseSha: string;
  headSha: string | null;
  status: RunStatus;
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  pushed: boolean;
  push: { remote?: string; reason?: string; error?: string; hint?: string } | null;
  keptWorkspace: boolean;
  pid: number;
  steps: StepResult[];
  error: { code: string; message: string } | null;
}

/** The `--json` summary: the record's essentials, steps keyed by id. */
export function summarize(r: RunRecord): Record<string, unknown> {
  return {
    runId: r.runId,
    status: r.status,
    branch: r.branch,
    baseSha: r.baseSha,
    headSha: r.headSha,
    pushed: r.pushed,
    worktree: r.keptWorkspace ? r.worktree : null,
    error: r.error,
    steps: Object.fromEntries(
      r.steps.map((s) => [s.id, { status: s.status, exitCode: s.exitCode, durationMs: s.durationMs, commit: s.commit }]),
    ),
  };
}
