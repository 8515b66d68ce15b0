/** How a step ended, in one shape for success and failure. Pure. */

export type StepStatus = 'completed' | 'failed' | 'timed_out' | 'oom' | 'canceled' | 'skipped';

export interface StepResult {
  id: string;
  status: StepStatus;
  exitCode: number | null;
  oomKilled: boolean;
  timedOut: boolean;
  durationMs: number;
  startedAt?: string;
  finishedAt?: string;
  commit: string | null;
  outputs: Record<string, string>;
  /** what a person should know: the limit that fired, an outputs problem */
  message?: string;
}

/** The first cause that ended the step wins. */
export type EndReason = 'exit' | 'timeout' | 'canceled';

export function classify(reason: EndReason, exitCode: number | null, oomKilled: boolean): StepStatus {
  if (reason === 'timeout') return 'timed_out';
  if (reason === 'canceled') return 'canceled';
  if (oomKilled) return 'oom';
  return exitCode === 0 ? 'completed' : 'failed';
}

/** `completed`, `failed (exit 2)`, `timed out`, `oom`, `canceled`: for trailers and the console. */
export function describeStatus(status: StepStatus, exitCode: number | null): string {
  switch (status) {
    case 'failed':
      return `failed (exit ${exitCode ?? '?'})`;
    case 'timed_out':
      return 'timed out';
    default:
      return status;
  }
}

export function isSuccess(status: StepStatus): boolean {
  return status === 'completed';
}
