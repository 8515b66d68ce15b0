/**
 * runner serve ends the gates whose wait ran out (a gate's `timeout:`): a
 * run at a gate holds no process, so nobody else would. Each such run of the
 * server's projects is rejected by its timeout (src/runs/decide.ts
 * expireGate, under the run's lock: a decision taken meanwhile wins).
 */
import { errorMessage } from '../common/errors.js';
import { gateTimedOut } from '../run/gate.js';
import { listRuns } from '../run/records.js';
import { expireGate } from '../runs/decide.js';

/** How often serve looks for gates whose wait ran out. */
export const GATE_SWEEP_MS = 10_000;

/** The run ids rejected now. */
export async function sweepGates(runsDir: string, home: string, served: (project: string) => Promise<boolean>, now: Date, say: (m: string) => void): Promise<string[]> {
  const due = await listRuns(runsDir, { where: (r) => r.status === 'awaiting_approval' && r.gate != null && gateTimedOut(r.gate, now) });
  const ended: string[] = [];
  for (const r of due) {
    if (!(await served(r.project))) continue;
    try {
      if (await expireGate(runsDir, home, r.runId, now)) {
        ended.push(r.runId);
        say(`${r.pipeline}: run ${r.runId} rejected: no decision at gate ${r.gate!.name} by ${r.gate!.deadline}`);
      }
    } catch (err) {
      say(`${r.pipeline}: could not end run ${r.runId} at its timed-out gate: ${errorMessage(err)}`);
    }
  }
  return ended;
}
