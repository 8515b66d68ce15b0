#!/usr/bin/env bash
# Make sure the Docker engine has gVisor's runtime (runsc), for steps with
# `isolation: gvisor`. For an engine this project's scripts started
# (ensure-docker.sh), it installs Debian's runsc, registers it in
# /etc/docker/daemon.json and has the engine reload its configuration (SIGHUP,
# no restart). An engine the user runs is left alone: it only says what to do.
set -euo pipefail

log() { echo "ensure-gvisor: $*" >&2; }
DAEMON_JSON=/etc/docker/daemon.json
MARK=/run/runner/dockerd.pid

has_runsc() { docker info --format '{{json .Runtimes}}' 2>/dev/null | grep -q '"runsc"'; }

if has_runsc; then exit 0; fi

pid=$(pidof dockerd 2>/dev/null | awk '{print $1}' || true)
if [ -z "$pid" ] || [ ! -f "$MARK" ] || [ "$(cat "$MARK")" != "$pid" ]; then
  log "the running Docker engine was not started by this project's scripts, so it is left as it is."
  log "It has no gVisor runtime: steps with isolation: gvisor are refused until it has one. To add it:"
  log "  apt-get install runsc; add {\"runtimes\": {\"runsc\": {\"path\": \"/usr/bin/runsc\", \"runtimeArgs\": [\"--platform=ptrace\"]}}} to $DAEMON_JSON;"
  log "  kill -HUP \$(pidof dockerd). See docs/gvisor.md."
  exit 0
fi

if ! command -v runsc >/dev/null 2>&1; then
  log "installing Debian's runsc (gVisor)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq runsc >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq runsc >/dev/null; }
fi

# ptrace: works on any x86-64 host (the KVM platform needs the CPU's virtualization, and this runsc predates systrap).
args='"--platform=ptrace"'
# This runsc tells the host's network namespace from a container's by /proc/sys/net/core/rmem_default, which kernels
# since 6.x show in every namespace: its own network stack then refuses every container. Where that is so, the sandbox
# uses the kernel's stack inside the container's namespace (--network=host); docs/gvisor.md says what that costs.
if unshare -n test -e /proc/sys/net/core/rmem_default 2>/dev/null; then
  args="$args, \"--network=host\""
  log "this kernel shows net.core.rmem_default in every network namespace: runsc gets --network=host (docs/gvisor.md)"
fi

mkdir -p "$(dirname "$DAEMON_JSON")"
node -e '
  const fs = require("fs");
  const [file, args] = [process.argv[1], JSON.parse("[" + process.argv[2] + "]")];
  const conf = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, "utf8") || "{}") : {};
  conf.runtimes = { ...(conf.runtimes || {}), runsc: { path: "/usr/bin/runsc", runtimeArgs: args } };
  fs.writeFileSync(file + ".tmp", JSON.stringify(conf, null, 2) + "\n");
  fs.renameSync(file + ".tmp", file);
' "$DAEMON_JSON" "$args"
kill -HUP "$pid"
for _ in $(seq 1 20); do
  if has_runsc; then log "registered runsc with the engine ($(runsc --version 2>/dev/null | head -n1))"; exit 0; fi
  sleep 0.5
done
log "the engine did not pick up runsc from $DAEMON_JSON; see /var/log/dockerd.log"
exit 1
