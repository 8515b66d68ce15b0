/** What a delivery starts from: a finished run with a branch, its project, and git as the project's owner. */
import { Git } from '../git/git.js';
import type { RunRecord } from '../run/record.js';
import { inspectProject, type ProjectFacts } from '../workspace/project.js';
import { DeliveryRefused } from './refusal.js';

export interface DeliverySource {
  rec: RunRecord;
  project: ProjectFacts;
  git: Git;
  /** the run branch's tip, now */
  head: string;
  base: string;
}

export async function deliverySource(rec: RunRecord): Promise<DeliverySource> {
  if (rec.status === 'running') throw new DeliveryRefused('not_deliverable', `run ${rec.runId} is still running: wait for it to end`);
  if (!rec.branch || !rec.baseSha) {
    throw new DeliveryRefused('not_deliverable', `run ${rec.runId} has no branch (it worked on a persistent directory): there is nothing to deliver`);
  }
  const project = await inspectProject((who) => new Git(who), rec.project);
  const git = new Git({ uid: project.uid, gid: project.gid });
  const r = await git.run(['rev-parse', '--verify', '--quiet', `refs/heads/${rec.branch}^{commit}`], {
    cwd: project.root,
    gitDir: project.commonDir,
    allowFail: true,
  });
  if (r.code !== 0) throw new DeliveryRefused('not_deliverable', `branch ${rec.branch} of run ${rec.runId} no longer exists in ${project.root}`);
  return { rec, project, git, head: r.stdout.trim(), base: rec.baseSha };
}
