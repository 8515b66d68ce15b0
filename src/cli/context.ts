/** What the commands that touch runs share: the runner home, and reconciling it first. */
import { DockerRuntime } from '../container/docker.js';
import { Git } from '../git/git.js';
import { reconcile } from '../run/reconcile.js';
import { RunnerHome, resolveHome } from '../workspace/home.js';

export async function openHome(flag: string | undefined, opts: { quiet?: boolean; create?: boolean } = {}): Promise<RunnerHome> {
  const home = new RunnerHome(resolveHome(flag));
  if (opts.create !== false) await home.ensure();
  const runtime = new DockerRuntime();
  // Recovery needs the engine to remove leftover containers; records are repaired without it.
  const reachable = await runtime.ping().then(
    () => true,
    () => false,
  );
  await reconcile(
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
  return home;
}
