/**
 * What the MCP tools run on: a runner home, the folders the server may run
 * pipelines from and work on projects in, and whoever starts and holds runs.
 * `runner mcp` starts runs in its own process (local-runs.ts); runner serve's
 * /mcp hands them to its queue (serve.ts). Either way the tools read, diff,
 * merge and cancel through the same functions as the CLI and the API.
 */
import type { LoadedPipeline } from '../pipeline/load.js';
import type { DeliveredBy, StartedBy } from '../run/record.js';
import type { HeldRuns } from './show.js';

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

export interface McpBackend extends HeldRuns {
  /** the runner home (runs/ under it) */
  home: string;
  runsDir: string;
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
  /** who the server records as starting runs and delivering them */
  startedBy: StartedBy;
  deliveredBy: DeliveredBy;
  /** the model API root agent tasks' agents call (runner mcp --agent-base-url), when not the preset's own */
  agentBaseUrl?: string;
}
