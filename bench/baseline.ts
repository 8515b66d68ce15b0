/**
 * The plain tools doing what a run does, for benches to compare against: a
 * worktree on a new branch, N containers under the runner's default limits
 * with the worktree and the project mounted, a commit after each, the
 * worktree removed (worktree add and remove under a lock, which git needs
 * when several run at once on one repository).
 */
export function baselineScript(steps: number): string {
  return `#!/bin/sh
# The same work by hand: a worktree on a new branch, ${steps} containers, ${steps} commits.
set -e
project=$1; wt=$2; branch=$3; image=$4
# git worktree add/remove are not safe to run at once on one repository (they read each other's
# records half-written): serialized, as the runner serializes them
flock "$project/.git/bench.lock" git -C "$project" worktree add -q -b "$branch" "$wt" HEAD
for i in $(seq 1 ${steps}); do
  docker run --rm --network none --memory 2g --cpus 1.5 --pids-limit 512 \\
    -v "$wt:/home/agent/run-workspace" -v "$project:/home/agent/project-workspace:ro" \\
    -w /home/agent/run-workspace "$image" sh -e -c "echo step $i > f$i.txt" >/dev/null
  git -C "$wt" add -A
  git -C "$wt" -c user.name=b -c user.email=b@localhost commit -q -m "step $i"
done
flock "$project/.git/bench.lock" git -C "$project" worktree remove --force "$wt"
`;
}

/** The matching pipeline: N trivial steps, each writing the file the script's container writes. */
export function trivialPipeline(steps: number, image: string): string {
  const list = Array.from({ length: steps }, (_, i) => `  - id: s${i + 1}\n    run: echo step ${i + 1} > f${i + 1}.txt\n`).join('');
  return `version: 1\nname: bench\nproject: { path: project, push: never }\ndefaults: { image: ${image} }\nsteps:\n${list}`;
}
