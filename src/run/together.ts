/** Which runs of steps overlapped in time (ran at once), for runs show and the summary. Pure. */
import { resultName, type StepResult } from './step-result.js';

/** For each entry of `steps` (by position), the names of the other entries whose run overlapped its own. */
export function ranTogether(steps: readonly StepResult[]): string[][] {
  const span = (s: StepResult): [number, number] | undefined =>
    s.startedAt && s.finishedAt && s.status !== 'skipped' ? [Date.parse(s.startedAt), Date.parse(s.finishedAt)] : undefined;
  return steps.map((s, i) => {
    const a = span(s);
    if (!a) return [];
    return steps.filter((t, j) => {
      const b = j !== i ? span(t) : undefined;
      return b !== undefined && a[0] < b[1] && b[0] < a[1];
    }).map(resultName);
  });
}
