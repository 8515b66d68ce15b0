/**
 * One base error with a stable string `code` and an ES2022 `cause`.
 * Subclasses exist where the caller acts differently on them.
 * Messages say what happened, to what, and what to do.
 */
export class RunnerError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** One problem found in a pipeline file, with where it is. */
export interface PipelineIssue {
  /** dotted/indexed path inside the document, e.g. `steps[1].resources.memory` */
  path: string;
  message: string;
  line?: number;
  col?: number;
}

/** The pipeline file is invalid; `issues` lists every problem at once. */
export class PipelineError extends RunnerError {
  readonly file: string;
  readonly issues: PipelineIssue[];

  constructor(file: string, issues: PipelineIssue[]) {
    super('pipeline_invalid', formatPipelineIssues(file, issues));
    this.file = file;
    this.issues = issues;
  }
}

export function formatPipelineIssue(file: string, issue: PipelineIssue): string {
  const where = issue.line !== undefined ? `${file}:${issue.line}:${issue.col ?? 1}` : file;
  const path = issue.path ? ` ${issue.path}:` : '';
  return `${where}${path} ${issue.message}`;
}

function formatPipelineIssues(file: string, issues: PipelineIssue[]): string {
  const n = issues.length;
  const head = `${file}: ${n} problem${n === 1 ? '' : 's'}`;
  return [head, ...issues.map((i) => `  ${formatPipelineIssue(file, i)}`)].join('\n');
}

/** Bad command-line usage (exit 2). */
export class UsageError extends RunnerError {
  constructor(message: string) {
    super('usage', message);
  }
}

/** The workspace (worktree, project path, runner home) is unusable or was tampered with. */
export class WorkspaceError extends RunnerError {}

/** A git command failed. */
export class GitError extends RunnerError {}

/** The container engine failed or is unreachable. */
export class ContainerError extends RunnerError {}

/** A run was canceled (Ctrl-C, SIGTERM). */
export class CanceledError extends RunnerError {
  constructor(message = 'canceled') {
    super('canceled', message);
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
