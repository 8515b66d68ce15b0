/** What a delivery starts from: a finished run with a branch, its project, and git as the project's owner. */
import { homeOf } from '../common/user-home.js';
import { Git } from '../git/git.js';
import type { RunRecord } from '../run/record.js';
import { inspectProject, type ProjectFacts } from '../workspace/project.js';
import { DeliveryRefused } from './refusal.js';

export interface DeliverySource {
  rec: RunRecord;
  project: ProjectFacts;
  git: Git;
  /** the commit the run ended on (its record's headSha) */
  head: string;
  base: string;
}

/** A run still going on (running, or queued to run) is never delivered: its record and branch are still its own. Pure. */
export function checkOver(rec: Pick<RunRecord, 'runId' | 'status'> & Partial<Pick<RunRecord, 'gate'>>): void {
  if (rec.status === 'running') throw new DeliveryRefused('not_deliverable', `run ${rec.runId} is still running: wait for it to end`);
  if (rec.status === 'awaiting_approval') throw new DeliveryRefused('not_deliverable', `run ${rec.runId} waits at an approval gate${rec.gate ? ` (${rec.gate.name})` : ''}: its work is not done; approve it (runner approve ${rec.runId}) and deliver it once it ends`);
  if (rec.status === 'queued') throw new DeliveryRefused('not_deliverable', `run ${rec.runId} is queued and has not run yet: wait for it to end`);
}

export async function deliverySource(rec: RunRecord): Promise<DeliverySource> {
  checkOver(rec);
  if (rec.status === 'not_started') throw new DeliveryRefused('not_deliverable', `run ${rec.runId} never started: there is nothing to deliver`);
  if (!rec.branch || !rec.baseSha || !rec.headSha) {
    throw new DeliveryRefused('not_deliverable', `run ${rec.runId} has no branch (it worked on a persistent directory): there is nothing to deliver`);
  }
  const project = await inspectProject((who) => new Git(who), rec.project);
  const git = new Git({ uid: project.uid, gid: project.gid, home: await homeOf(project.uid) });
  // What is delivered is the commit the run ended on, which its verification
  // covered: never whatever its branch (a task's, say) holds by now.
  const call = { cwd: project.root, gitDir: project.commonDir, allowFail: true };
  const there = await git.run(['cat-file', '-e', `${rec.headSha}^{commit}`], call);
  if (there.code !== 0) throw new DeliveryRefused('not_deliverable', `commit ${rec.headSha} of run ${rec.runId} is no longer in ${project.root}`);
  return { rec, project, git, head: rec.headSha, base: rec.baseSha };
}
