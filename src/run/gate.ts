/**
 * Approval gates (a step with `approval:`): what a run waiting at one keeps on
 * its record, what a decision is, and when a wait has run out. Pure. The run
 * stops at a gate holding nothing (run-flow.ts); a decision is taken by
 * src/runs/decide.ts and an approval continues the run (src/runs/resume.ts).
 */
import type { DeliveredBy } from './record.js';

/** A gate's outputs, as later steps read them (`${{ steps.ID.outputs.comment }}`). */
export const GATE_OUTPUTS = ['decision', 'comment', 'by'] as const;

/** How long a gate waits when its file does not say. */
export const DEFAULT_GATE_TIMEOUT_MS = 7 * 86_400_000;

/** The longest comment a decision keeps (it reaches steps' environment). */
export const MAX_COMMENT_CHARS = 8_000;

/** Who decided: a person through a door, or the gate's own timeout. */
export type DecidedBy = DeliveredBy | { via: 'timeout' };

/** A run waiting at a gate, on its record. */
export interface GateWait {
  /** the step's id, and its unit's name (`approve#2` on a second visit) */
  id: string;
  name: string;
  prompt: string;
  since: string;
  /** when it is rejected by itself */
  deadline: string;
  /** the notify: entries told */
  notify?: string[];
}

export interface GateDecision {
  /** the unit's name */
  step: string;
  decision: 'approved' | 'rejected';
  by: DecidedBy;
  at: string;
  comment: string;
}

export function gateWait(id: string, name: string, approval: { prompt: string; timeoutMs?: number; notify?: string[] }, now: Date): GateWait {
  const deadline = new Date(now.getTime() + (approval.timeoutMs ?? DEFAULT_GATE_TIMEOUT_MS));
  return { id, name, prompt: approval.prompt, since: now.toISOString(), deadline: deadline.toISOString(), ...(approval.notify?.length ? { notify: approval.notify } : {}) };
}

/** Whether the gate's wait has run out at `now`. */
export function gateTimedOut(gate: Pick<GateWait, 'deadline'>, now: Date): boolean {
  return now.getTime() >= Date.parse(gate.deadline);
}

/** The newest decision taken at the gate named `name`, if any. */
export function decisionFor(decisions: readonly GateDecision[] | undefined, name: string): GateDecision | undefined {
  return [...(decisions ?? [])].reverse().find((d) => d.step === name);
}

/** What the gate gives the steps after it. */
export function gateOutputs(d: GateDecision): Record<string, string> {
  return { decision: d.decision, comment: d.comment, by: describeDecider(d.by) };
}

/** `alice (cli)`, `10.0.0.5 (dashboard)`, `timeout`. */
export function describeDecider(by: DecidedBy): string {
  if (by.via === 'timeout') return 'timeout';
  const who = 'user' in by && by.user ? by.user : 'from' in by && by.from ? by.from : '';
  return who ? `${who} (${by.via})` : by.via;
}
