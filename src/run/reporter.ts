/** What the orchestrator tells whoever shows a run to a person (the console, later the dashboard). */
import type { Isolation } from '../pipeline/schema.js';
import type { PullProgress } from '../container/runtime.js';
import type { RunRecord } from './record.js';
import type { StepResult } from './step-result.js';

export interface Reporter {
  runStarted(r: RunRecord, stepIds: string[]): void;
  pullProgress(image: string, p: PullProgress): void;
  stepStarted(step: { id: string; index: number; total: number; image: string; isolation?: Isolation }): void;
  stepLine(stepId: string, stream: 'stdout' | 'stderr', line: string): void;
  stepFinished(result: StepResult): void;
  info(message: string): void;
  warn(message: string): void;
  runFinished(r: RunRecord): void;
  /** A promise while the reporter's output is backed up: the step's output waits for it. */
  backpressure?(): Promise<void> | undefined;
}

/** A reporter that shows nothing (for tests and --quiet uses). */
export const silentReporter: Reporter = {
  runStarted() {},
  pullProgress() {},
  stepStarted() {},
  stepLine() {},
  stepFinished() {},
  info() {},
  warn() {},
  runFinished() {},
};
