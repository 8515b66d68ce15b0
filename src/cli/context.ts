/** What the commands that touch runs share: the runner home, and reconciling it first. */
import { DockerRuntime } from '../container/local/docker.js';
import { Git } from '../git/git.js';
import { reconcile } from '../run/reconcile.js';
import type { RunRecord } from '../run/record.js';
import { canonicalHome, RunnerHome } from '../workspace/home.js';

export async function openHome(flag: string | undefined, opts: { quiet?: boolean; create?: boolean } = {}): Promise<RunnerHome> {
  return (await openHomeWithRuns(flag, opts)).home;
}

/** openHome, with the run records reconciliation read (so a listing need not read them twice). */
export async function openHomeWithRuns(
  flag: string | undefined,
  opts: { quiet?: boolean; create?: boolean } = {},
): Promise<{ home: RunnerHome; runs: RunRecord[] }> {
  const home = new RunnerHome(await canonicalHome(flag));
  if (opts.create !== false) await home.ensure();
  const runtime = new DockerRuntime();
  // Recovery needs the engine to remove leftover containers; records are repaired without it.
  const reachable = await runtime.ping().then(
    () => true,
    () => false,
  );
  const report = await reconcile(
    {
      runtime: reachable ? runtime : undefined,
      makeGit: (who) => new Git(who),
      clock: () => new Date(),
      say: (m) => {
        if (!opts.quiet) process.stderr.write(`runner: ${m}\n`);
      },
    },
    home,
  );
  return { home, runs: report.runs };
}
