#!/usr/bin/env bash
# The whole test suite (make test): every file of dist/test, test/safety again under gVisor, and test/safety
# with the core integration files again on Podman.
#
# Files run side by side: most of them wait on Docker, git, gVisor and their own child processes, not on
# this machine's cores, and each makes its own projects, homes, containers (found by its own labels),
# networks, image tags and ports (port 0), so none sees another's. First, two lanes at once:
# - the main lane: every file but the swarm ones, TEST_JOBS (4) at a time, the slow ones first (so the
#   last to finish is not a slow one started late);
# - the gVisor lane: test/safety's hostile steps again under gVisor (but big-output; see below) (RUNNER_ISOLATION=gvisor is set for a
#   whole node --test, so these cannot join the main lane), 2 at a time (gVisor's ptrace platform is heavy on
#   the cores the main lane shares).
# Then the swarm files (test/integration/swarm*), one after the other and alone on Docker's engine: each
# brings up the one lab (scripts/swarm-lab.sh: fixed names, the host's engine made a swarm manager, taken
# down after the file). Beside the other files, steps' gateways failed to resolve the names of their test
# networks (getaddrinfo ENOTFOUND) while the lab came and went, which they never did with the lab apart.
# Beside them, the Podman lane: test/safety and the core files again on root Podman (docs/podman.md).
# The gVisor pass has no skip: with no working runsc the runner refuses every step (no_gvisor) and the tests
# fail; test/safety/container.test.ts checks the step saw gVisor's kernel. A failure anywhere fails the suite.
# At the end: the seconds each file's tests took, slowest first (scripts/test-times.mjs), then each lane's
# failing tests with their errors again (a CI page may show only the last lines).
# Nothing may hang the suite: a test that runs past TEST_TIMEOUT_S (1500) fails by name, a file whose tests are
# done exits even with a handle left open (--test-force-exit), and a lane that runs past its cap (LANE_CAP_S,
# 2100) is ended and reported as failed, its output shown. A CI run once hung in the gVisor lane until CI's own
# limit ended it, and showed nothing of the lane; now it would show which test and fail in time.
# node applies --test-timeout to a whole file too (with process isolation each file is one test): 600 s ended
# test/safety/limits.test.js under gVisor on a loaded machine (326 s on a quiet one), so the bound is 1500 s,
# well above any file's time and below the lane's cap.
set -uo pipefail
cd "$(dirname "$0")/.."
JOBS=${TEST_JOBS:-4}
TEST_TIMEOUT_S=${TEST_TIMEOUT_S:-1500}
LANE_CAP_S=${LANE_CAP_S:-2100}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# spec on the terminal (or a file), and each file's time into $out/times-NAME; capped at $2 seconds
spec() {
  local name=$1 cap=$2; shift 2
  TEST_TIMES_FILE="$out/times-$name" timeout -k 30 "$cap" node --test --test-force-exit --test-timeout=$((TEST_TIMEOUT_S * 1000)) \
    --test-reporter=spec --test-reporter-destination=stdout --test-reporter=./scripts/test-times.mjs \
    --test-reporter-destination=/dev/null "$@" </dev/null
  local code=$?
  [ "$code" = 124 ] && echo "# the $name lane ran past its cap of $cap s and was ended: a test hung (the last tests above it are the suspects)"
  return "$code"
}

mapfile -t all < <(find dist/test -name '*.test.js' | sort)
swarm=() slow=() rest=()
for f in "${all[@]}"; do
  case "$f" in
    dist/test/integration/swarm*) swarm+=("$f") ;;
    dist/test/integration/* | dist/test/safety/* | dist/test/agents/*) slow+=("$f") ;;
    *) rest+=("$f") ;;
  esac
done

# test/safety again under gVisor, but for big-output: under gVisor the engine is Docker's, as in the main lane, and
# what that file tests is the runner reading the engine's stream of 1 GB (the same whatever kernel the step has);
# there it took 200 s of the two cores the main lane shares. It runs on Podman, whose stream is its own.
gvisor_files=()
for f in dist/test/safety/*.test.js; do
  [ "$f" = dist/test/safety/big-output.test.js ] || gvisor_files+=("$f")
done

# the core integration files that hold on Podman as on Docker (docs/podman.md says which differ and why)
podman_core=(dist/test/integration/exec.test.js dist/test/integration/cache.test.js dist/test/integration/step-ends.test.js)

started=$SECONDS
# the gVisor lane writes to a file, shown whole when it ends, so the two lanes' lines do not mix
RUNNER_ISOLATION=gvisor spec gvisor "$LANE_CAP_S" --test-concurrency=2 "${gvisor_files[@]}" >"$out/gvisor.log" 2>&1 &
gvisor_pid=$!
spec main "$LANE_CAP_S" --test-concurrency="$JOBS" "${slow[@]}" "${rest[@]}" > >(tee "$out/main.log") 2>&1
main=$?
echo "# main lane ($JOBS files at a time): $((SECONDS - started)) s (exit $main)"
wait "$gvisor_pid"
gvisor=$?
gvisor_done=$((SECONDS - started))
echo "# test/safety under gVisor (2 files at a time, beside the main lane), its output:"
cat "$out/gvisor.log"
echo "# test/safety under gVisor: ended by $gvisor_done s (exit $gvisor)"
t0=$SECONDS
# the Podman lane, beside the swarm files (another engine: its networks, names and store are its own, so the
# lab's coming and going on Docker's engine does not reach it): test/safety and the core integration files on
# root Podman's API (make podman started it); the files' own docker CLI calls go there too, through DOCKER_HOST
DOCKER_HOST=unix:///run/podman/podman.sock spec podman "$LANE_CAP_S" --test-concurrency=2 dist/test/safety/ "${podman_core[@]}" >"$out/podman.log" 2>&1 &
podman_pid=$!
spec swarm 1500 --test-concurrency=1 "${swarm[@]}" > >(tee "$out/swarm.log") 2>&1
swarm_exit=$?
echo "# the swarm files, one at a time: $((SECONDS - t0)) s (exit $swarm_exit)"
wait "$podman_pid"
podman=$?
echo "# test/safety and the core files on Podman (2 files at a time, beside the swarm files), its output:"
cat "$out/podman.log"
echo "# on Podman: ended by $((SECONDS - t0)) s (exit $podman)"
for name in main swarm gvisor podman; do
  echo "# seconds of each file's tests ($name):"
  cat "$out/times-$name" 2>/dev/null
done
echo "# the whole suite: $((SECONDS - started)) s"
# last, so the tail of a failed run (all some CI pages show) says which test failed and why
for name in main gvisor swarm podman; do
  failed=$(sed -n '/^✖ failing tests:/,$p' "$out/$name.log" 2>/dev/null | head -n 80)
  [ -n "$failed" ] && printf '# the %s lane failed; its failing tests:\n%s\n' "$name" "$failed"
done
[ "$main" = 0 ] && [ "$gvisor" = 0 ] && [ "$swarm_exit" = 0 ] && [ "$podman" = 0 ]
