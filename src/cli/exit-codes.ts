/** The exit codes of `runner`, and which errors map to which. */
import { ContainerError, GitError, PipelineError, RunnerError, UsageError, WorkspaceError } from '../common/errors.js';
import { DeliveryRefused } from '../delivery/refusal.js';
import type { RunStatus } from '../run/record.js';

export const EXIT = {
  ok: 0,
  stepFailed: 1,
  badInput: 2,
  infrastructure: 3,
  interrupted: 130,
} as const;

const BAD_INPUT_CODES = new Set(['not_waiting', 'already_decided', 'gate_timed_out', 'not_resumable', 'not_forkable', 'pipeline_changed',
  // a request an operation refuses as it is asked (a comment too long, a fork from a step the pipeline lacks)
  'bad_request',
  'project_missing',
  'project_not_dir',
  'not_a_repository',
  'base_missing',
  'secret_missing',
  // a credential's secret whose value a header cannot carry (a line break)
  'secret_invalid',
  'unsafe_name',
  'project_symlink',
  // a persistent directory holding the runner's code cache
  'project_holds_runner',
  'user_mismatch',
  'task_project_mismatch',
  'task_unknown_dir',
  'run_unknown',
  'no_branch',
  'no_diff',
  'no_log',
  'run_live',
  'task_uncommitted',
  'bad_input',
  'home_unreachable',
  // the file asks for a sandbox this engine does not have (a broken one, gvisor_broken, is infrastructure: 3)
  'no_gvisor',
]);

/** A run that ended in error for one of these failed as a step would have: exit 1. */
const RUN_FAILED_CODES = new Set(['hook_failed', 'task_git_replaced', 'workspace_tampered']);

export function exitCodeForError(err: unknown): number {
  // A refused delivery is an answer, not a breakage: it changed nothing.
  if (err instanceof DeliveryRefused) return EXIT.stepFailed;
  if (err instanceof PipelineError || err instanceof UsageError) return EXIT.badInput;
  if (err instanceof RunnerError && BAD_INPUT_CODES.has(err.code)) return EXIT.badInput;
  if (err instanceof ContainerError || err instanceof GitError || err instanceof WorkspaceError) return EXIT.infrastructure;
  if (err instanceof RunnerError && err.code === 'canceled') return EXIT.interrupted;
  return EXIT.infrastructure;
}

export function exitCodeForRun(status: RunStatus, errorCode?: string): number {
  if (status === 'error' && errorCode !== undefined) {
    if (RUN_FAILED_CODES.has(errorCode)) return EXIT.stepFailed;
    if (BAD_INPUT_CODES.has(errorCode)) return EXIT.badInput;
  }
  switch (status) {
    case 'succeeded':
      return EXIT.ok;
    case 'failed':
    case 'rejected':
      return EXIT.stepFailed;
    case 'canceled':
      return EXIT.interrupted;
    default:
      return EXIT.infrastructure;
  }
}
