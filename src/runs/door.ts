/**
 * What the run operations are given by the door that calls them (the CLI,
 * runner serve's API and dashboard, runner mcp or serve's /mcp): the runner
 * home, the door's scope (scope.ts: the projects whose runs it serves), and
 * the runs it holds itself (queued or starting, with no record of their own
 * yet). A door that starts runs also says where it takes pipelines and
 * projects from and how it starts and cancels a run: `runner mcp` through its
 * own run holder (holder.ts), runner serve through its queue, whose start is
 * the same holder's.
 */
import type { LoadedPipeline } from '../pipeline/load.js';
import type { DeliveredBy, StartedBy } from '../run/record.js';
import type { RunnerHome } from '../workspace/home.js';
import { EVERY_PROJECT, type Scope } from './scope.js';
import type { HeldRuns } from './show.js';
import type { Prepared } from './resume.js';

export interface PipelineEntry {
  /** the file, its real path */
  file: string;
  /** null when the file does not validate */
  name: string | null;
  description?: string | undefined;
  inputs: Record<string, { description?: string | undefined; default?: string | undefined }>;
  /** why the file is not in use */
  errors: string[];
}

/** What every operation on a run needs. */
export interface Door extends HeldRuns {
  /** the runner home (runs/ under it) */
  home: string;
  runsDir: string;
  /** the projects whose runs this door serves */
  scope: Scope;
  /**
   * true (the CLI): a merge into a name that is not a branch is refused by the
   * delivery's own guard and recorded as a refused attempt, as `runner merge`
   * always did; otherwise (the servers) it is a bad request, refused before anything
   */
  recordsBadTargets?: boolean;
}

/** A door that starts and cancels runs (runner serve, runner mcp). */
export interface StartDoor extends Door {
  /** real paths: pipelines are run only from under these */
  pipelineDirs: string[];
  /** real paths: agent tasks work only on projects under these */
  projectDirs: string[];
  /** the pipeline files under pipelineDirs, read now */
  pipelines(): Promise<PipelineEntry[]>;
  /**
   * Starts a run of a pipeline already checked (under pipelineDirs, or a task
   * file the server wrote under the home); resolves with its id once the run
   * is on the server's books (run_status finds it). Throws bad_input for
   * inputs the pipeline does not take.
   */
  start(loaded: LoadedPipeline, inputs: Record<string, string>, startedBy: StartedBy): Promise<string>;
  /** true when the run was running (now canceling) or queued (now not_started); false when this server does not hold it */
  cancel(runId: string): Promise<boolean>;
  /** goes on with a run resume.ts prepared (a resume, an approved gate, a fork) through the door's holder; the run's id */
  continueRun(prepared: Prepared, startedBy: StartedBy): Promise<string>;
  /** the model API root agent tasks' agents call (runner mcp --agent-base-url), when not the preset's own */
  agentBaseUrl?: string;
}

/** Who a door records as starting runs and delivering them. */
export interface Caller {
  startedBy: StartedBy;
  deliveredBy: DeliveredBy;
}

/** The CLI's door: every project of the home; it holds no run (runner exec's run is its own process's). */
export function cliDoor(home: RunnerHome): Door {
  return { home: home.root, runsDir: home.runs, scope: EVERY_PROJECT, notStarted: () => undefined, active: () => [], recordsBadTargets: true };
}
