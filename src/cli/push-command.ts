/** `runner push RUN_ID`: pushes a run's branch again, e.g. after a push that failed. */
import { RunnerError } from '../common/errors.js';
import { Git } from '../git/git.js';
import { pushBranch } from '../git/push.js';
import { loadPipeline } from '../pipeline/load.js';
import { readRun, writeRun } from '../run/records.js';
import { inspectProject } from '../workspace/project.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';

export async function pushCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('push', args, { remote: { type: 'string' }, home: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home);
  const rec = await readRun(home.runs, positionals[0]!);
  if (rec.status === 'queued' || rec.status === 'not_started') throw new RunnerError('no_branch', `run ${rec.runId} never started: it has no branch to push`);
  if (!rec.branch) throw new RunnerError('no_branch', `run ${rec.runId} has no branch to push (it worked on a persistent directory)`);
  if (rec.status === 'running') throw new RunnerError('run_live', `run ${rec.runId} is still running: push it when it ends`);
  const remote = values.remote ?? (await loadPipeline(rec.pipelineFile).then((l) => l.pipeline.project.remote).catch(() => 'origin'));
  const project = await inspectProject((who) => new Git(who), rec.project);
  const outcome = await pushBranch(new Git({ uid: project.uid, gid: project.gid }), project, remote, rec.branch, 'always');
  if (!outcome.pushed) {
    const why = outcome.reason === 'push_failed' ? outcome.error : outcome.reason === 'no_remote_always' ? `the project has no remote "${remote}"` : outcome.reason;
    throw new RunnerError('push_failed', `push of ${rec.branch} to ${remote} failed: ${why}`);
  }
  rec.pushed = true;
  rec.push = { remote };
  await writeRun(home.runs, rec);
  process.stdout.write(`pushed ${rec.branch} to ${remote}\n`);
  return 0;
}
