#!/usr/bin/env bash
# The whole test suite (make test): every file of dist/test, then test/safety again under gVisor.
#
# Files run side by side: most of them wait on Docker, git, gVisor and their own child processes, not on
# this machine's cores, and each makes its own projects, homes, containers (found by its own labels),
# networks, image tags and ports (port 0), so none sees another's. Two kinds do not share:
# - the swarm files (test/integration/swarm*) bring up one lab each (scripts/swarm-lab.sh: fixed names,
#   the host's engine made a swarm manager, taken down after the file): they run one after the other,
#   in a lane of their own beside the others;
# - nothing else is held back: a file that cannot share the engine goes in the swarm lane (say why there).
# The slow files go first, so the last to finish is not a slow one started late.
#
# TEST_JOBS (4): files at once in the main lane. A failure anywhere fails the suite; nothing is skipped.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${TEST_JOBS:-4}
SPEC=(node --test --test-reporter=spec)

mapfile -t all < <(find dist/test -name '*.test.js' | sort)
serial=() slow=() rest=()
for f in "${all[@]}"; do
  case "$f" in
    dist/test/integration/swarm*) serial+=("$f") ;;
    dist/test/integration/* | dist/test/safety/* | dist/test/agents/*) slow+=("$f") ;;
    *) rest+=("$f") ;;
  esac
done

started=$SECONDS
lane=$(mktemp)
trap 'rm -f "$lane"' EXIT
# the serial lane writes to a file, shown whole when it ends, so the two lanes' lines do not mix
"${SPEC[@]}" --test-concurrency=1 "${serial[@]}" >"$lane" 2>&1 </dev/null &
serial_pid=$!
"${SPEC[@]}" --test-concurrency="$JOBS" "${slow[@]}" "${rest[@]}" </dev/null
main=$?
echo "# main lane: $((SECONDS - started)) s (exit $main)"
wait "$serial_pid"
swarm=$?
echo "# swarm lane (one file at a time), its output:"
cat "$lane"
echo "# swarm lane: $((SECONDS - started)) s (exit $swarm)"

# test/safety's hostile steps again, under gVisor. No skip: with no working runsc the runner refuses every
# step (no_gvisor) and the tests fail; test/safety/container.test.ts checks the step saw gVisor's kernel.
gstart=$SECONDS
RUNNER_ISOLATION=gvisor "${SPEC[@]}" --test-concurrency="$JOBS" dist/test/safety/ </dev/null
gvisor=$?
echo "# gVisor pass over test/safety: $((SECONDS - gstart)) s (exit $gvisor)"
echo "# the whole suite: $((SECONDS - started)) s"
[ "$main" = 0 ] && [ "$swarm" = 0 ] && [ "$gvisor" = 0 ]
