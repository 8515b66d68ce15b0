/** The commit message of a step's work (see the pipeline format's "Commits"). Pure. */
import { visible } from '../common/visible.js';
import { describeStatus, type StepStatus } from './step-result.js';

export interface CommitFacts {
  runId: string;
  stepId: string;
  /** the agent's name, else the image */
  actor: string;
  status: StepStatus;
  exitCode: number | null;
  summary?: string;
  /** what a person should know about the limits that fired, one line each */
  limits?: string[];
}

const MAX_SUBJECT_SUMMARY = 72;

export function commitMessage(f: CommitFacts): string {
  const statusText = describeStatus(f.status, f.exitCode);
  const firstLine = (f.summary ?? '').split('\n').map((l) => l.trim()).find((l) => l !== '') ?? '';
  // The summary is the step's text: no control character reaches a commit (nor whoever reads git log in a terminal).
  let summary = visible(firstLine) || statusText;
  if (summary.length > MAX_SUBJECT_SUMMARY) summary = `${summary.slice(0, MAX_SUBJECT_SUMMARY - 1)}…`;
  return [
    `step/${f.stepId} (${visible(f.actor)}): ${summary}`,
    '',
    `Runner-Run: ${f.runId}`,
    `Runner-Step: ${f.stepId}`,
    `Runner-Status: ${statusText}`,
    ...(f.limits ?? []).map((l) => `Runner-Limit: ${l}`),
    '',
  ].join('\n');
}

/** The commit that brings a lane's work back into the run's branch. */
export function mergeMessage(f: { runId: string; name: string; branch: string; status: string }): string {
  return [`merge/${f.name} (${visible(f.branch)}): ${f.status}`, '', `Runner-Run: ${f.runId}`, `Runner-Step: ${f.name}`, `Runner-Merge: ${visible(f.branch)}`, ''].join('\n');
}
