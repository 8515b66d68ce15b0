/**
 * Approve or reject a run waiting at a gate (runner approve / reject, POST
 * /api/runs/:id/approve|reject, MCP approve_run / reject_run, the dashboard's
 * buttons): one operation, its checks here. The decision goes on the record
 * (who, when, through which door, the comment) under the run's lock, so it is
 * taken once. A rejection ends the run `rejected`, its work kept on its
 * branch; an approval leaves the run to be continued (resume.ts) by whoever
 * holds it: a `runner exec` waiting in the foreground, or the door.
 */
import { RunnerError } from '../common/errors.js';
import { describeDecider, gateTimedOut, MAX_COMMENT_CHARS, type DecidedBy, type GateDecision } from '../run/gate.js';
import type { HeldLock } from '../common/kernel-lock.js';
import { tryOwnerLock } from '../run/owner-lock.js';
import type { RunRecord } from '../run/record.js';
import { listRuns, readRun, writeRun } from '../run/records.js';
import type { Door } from './door.js';
import { showRun } from './show.js';

export interface Decided {
  runId: string;
  step: string;
  decision: GateDecision['decision'];
  /** the run's status now: awaiting_approval (approved, to be continued) or rejected */
  status: RunRecord['status'];
  record: RunRecord;
}

export async function decideGate(door: Door, id: string, decision: GateDecision['decision'], opts: { comment?: string; by: DecidedBy; now?: Date }): Promise<Decided> {
  const comment = (opts.comment ?? '').trim();
  if (comment.length > MAX_COMMENT_CHARS) throw new RunnerError('bad_request', `the comment is ${comment.length} characters; at most ${MAX_COMMENT_CHARS} are kept: shorten it`);
  await showRun(door, id); // known, and the door's
  const lock = await lockAtGate(door, id);
  if (!lock) throw new RunnerError('not_waiting', `run ${id} is not waiting at a gate: it is being run or continued right now (runner runs show ${id})`);
  try {
    const rec = await readRun(door.runsDir, id);
    const now = opts.now ?? new Date();
    const gate = rec.gate;
    if (rec.status !== 'awaiting_approval' || !gate) throw new RunnerError('not_waiting', `run ${id} is ${rec.status}, not waiting at a gate: there is nothing to ${decision === 'approved' ? 'approve' : 'reject'}`);
    const taken = rec.decisions?.find((d) => d.step === gate.name && Date.parse(d.at) >= Date.parse(gate.since));
    if (taken) {
      throw new RunnerError('already_decided', `the gate ${gate.name} of run ${id} was already ${taken.decision} by ${describeDecider(taken.by)} at ${taken.at}${taken.decision === 'approved' ? `: the run goes on (runner runs show ${id}; if nothing runs it, runner resume ${id})` : ''}`);
    }
    if (gateTimedOut(gate, now)) {
      endTimedOut(rec, now);
      await writeRun(door.runsDir, rec);
      throw new RunnerError('gate_timed_out', `the gate ${gate.name} of run ${id} waited until ${gate.deadline} and timed out: the run is rejected, its work kept on ${rec.branch ?? 'its directory'}`);
    }
    const d: GateDecision = { step: gate.name, decision, by: opts.by, at: now.toISOString(), comment };
    if (decision === 'rejected') endRejected(rec, d, now);
    else rec.decisions = [...(rec.decisions ?? []), d];
    await writeRun(door.runsDir, rec);
    return { runId: id, step: gate.name, decision, status: rec.status, record: rec };
  } finally {
    await lock.release();
  }
}

/** How long a decision waits for a run that has just stopped at its gate to let go of it (its cleanup). */
const LETTING_GO_MS = 15_000;

/**
 * The run's lock, for a decision. A run whose record says it waits may still
 * be letting go (its worktree being removed, in the moment after it stopped):
 * the decision waits for that, a little, rather than be refused.
 */
async function lockAtGate(door: Door, id: string): Promise<HeldLock | undefined> {
  const until = Date.now() + LETTING_GO_MS;
  for (;;) {
    const lock = await tryOwnerLock(door.home, id);
    if (lock) return lock;
    const rec = await readRun(door.runsDir, id).catch(() => undefined);
    if (rec?.status !== 'awaiting_approval' || Date.now() >= until) return undefined;
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A run whose gate said no (a person, or its timeout): rejected, ended, the gate's entry on record. Pure but for the record it changes. */
export function endRejected(rec: RunRecord, d: GateDecision, now: Date): void {
  const gate = rec.gate!;
  rec.decisions = [...(rec.decisions ?? []), d];
  rec.steps.push({
    id: gate.id,
    ...(gate.name !== gate.id ? { name: gate.name } : {}),
    status: 'failed',
    exitCode: null,
    oomKilled: false,
    timedOut: d.by.via === 'timeout',
    durationMs: now.getTime() - Date.parse(gate.since),
    startedAt: gate.since,
    finishedAt: now.toISOString(),
    commit: null,
    outputs: {},
    limits: [],
    approval: d,
    message: d.by.via === 'timeout' ? `no decision by ${gate.deadline}: timed out` : `rejected by ${describeDecider(d.by)}${d.comment ? `: ${d.comment}` : ''}`,
  });
  rec.status = 'rejected';
  rec.error = { code: d.by.via === 'timeout' ? 'gate_timed_out' : 'rejected', message: rec.steps[rec.steps.length - 1]!.message! };
  rec.gate = null;
  rec.finishedAt = now.toISOString();
  rec.durationMs = now.getTime() - Date.parse(rec.startedAt);
}

/** A gate whose wait ran out: rejected by its timeout. Pure but for the record it changes. */
function endTimedOut(rec: RunRecord, now: Date): void {
  const gate = rec.gate!;
  endRejected(rec, { step: gate.name, decision: 'rejected', by: { via: 'timeout' }, at: now.toISOString(), comment: `no decision by ${gate.deadline}` }, now);
}

/** Gates whose wait ran out by `now`: rejected (timed out), as a decision would. What serve's sweep and a waiting exec call. */
export async function expireGate(runsDir: string, home: string, id: string, now: Date): Promise<boolean> {
  const lock = await tryOwnerLock(home, id);
  if (!lock) return false;
  try {
    const rec = await readRun(runsDir, id);
    if (rec.status !== 'awaiting_approval' || !rec.gate || !gateTimedOut(rec.gate, now)) return false;
    if (rec.decisions?.some((d) => d.step === rec.gate!.name && Date.parse(d.at) >= Date.parse(rec.gate!.since))) return false; // approved: being continued
    endTimedOut(rec, now);
    await writeRun(runsDir, rec);
    return true;
  } finally {
    await lock.release();
  }
}

/** How often runner serve looks for gates whose wait ran out. */
export const GATE_SWEEP_MS = 60_000;

/** Every run of the home waiting at a gate whose wait ran out: rejected (timed out), whoever looks (the gate's own rule); their ids. */
export async function expireGates(home: { root: string; runs: string }, now: Date): Promise<string[]> {
  const waiting = await listRuns(home.runs, { where: (r) => r.status === 'awaiting_approval' && r.gate != null && gateTimedOut(r.gate, now) });
  const out: string[] = [];
  for (const r of waiting) {
    if (await expireGate(home.runs, home.root, r.runId, now)) out.push(r.runId);
  }
  return out;
}
