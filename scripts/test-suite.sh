#!/usr/bin/env bash
# The whole test suite (make test): every file of dist/test, and test/safety again under gVisor.
#
# Files run side by side: most of them wait on Docker, git, gVisor and their own child processes, not on
# this machine's cores, and each makes its own projects, homes, containers (found by its own labels),
# networks, image tags and ports (port 0), so none sees another's. Two lanes run at once:
# - the main lane: every file but the swarm ones, TEST_JOBS (4) at a time, the slow ones first (so the
#   last to finish is not a slow one started late);
# - the side lane: the swarm files (test/integration/swarm*) one after the other, since each brings up
#   the one lab (scripts/swarm-lab.sh: fixed names, the host's engine made a swarm manager, taken down
#   after the file); then test/safety's hostile steps again under gVisor (RUNNER_ISOLATION=gvisor for the
#   whole node --test, so it cannot share the main lane's), TEST_JOBS at a time.
# The gVisor pass has no skip: with no working runsc the runner refuses every step (no_gvisor) and the tests
# fail; test/safety/container.test.ts checks the step saw gVisor's kernel. A failure anywhere fails the suite.
# At the end: the seconds each file's tests took, slowest first (scripts/test-times.mjs).
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${TEST_JOBS:-4}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# spec on the terminal (or a file), and each file's time into $out/times-NAME
spec() { local name=$1; shift; node --test --test-reporter=spec --test-reporter-destination=stdout --test-reporter=./scripts/test-times.mjs --test-reporter-destination="$out/times-$name" "$@" </dev/null; }

mapfile -t all < <(find dist/test -name '*.test.js' | sort)
swarm=() slow=() rest=()
for f in "${all[@]}"; do
  case "$f" in
    dist/test/integration/swarm*) swarm+=("$f") ;;
    dist/test/integration/* | dist/test/safety/* | dist/test/agents/*) slow+=("$f") ;;
    *) rest+=("$f") ;;
  esac
done

started=$SECONDS
side() {
  local t0=$SECONDS swarm_exit gvisor_exit
  spec swarm --test-concurrency=1 "${swarm[@]}"
  swarm_exit=$?
  echo "# swarm files, one at a time: $((SECONDS - t0)) s (exit $swarm_exit)"
  t0=$SECONDS
  RUNNER_ISOLATION=gvisor spec gvisor --test-concurrency="$JOBS" dist/test/safety/
  gvisor_exit=$?
  echo "# test/safety under gVisor: $((SECONDS - t0)) s (exit $gvisor_exit)"
  [ "$swarm_exit" = 0 ] && [ "$gvisor_exit" = 0 ]
}
# the side lane writes to a file, shown whole when it ends, so the two lanes' lines do not mix
side >"$out/side.log" 2>&1 &
side_pid=$!
spec main --test-concurrency="$JOBS" "${slow[@]}" "${rest[@]}"
main=$?
echo "# main lane ($JOBS files at a time): $((SECONDS - started)) s (exit $main)"
wait "$side_pid"
side_exit=$?
echo "# the side lane (swarm files, then test/safety under gVisor), its output:"
cat "$out/side.log"
echo "# the side lane: $((SECONDS - started)) s (exit $side_exit)"
for name in main swarm gvisor; do
  echo "# seconds of each file's tests ($name):"
  cat "$out/times-$name" 2>/dev/null
done
echo "# the whole suite: $((SECONDS - started)) s"
[ "$main" = 0 ] && [ "$side_exit" = 0 ]
