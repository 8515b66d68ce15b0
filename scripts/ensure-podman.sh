#!/usr/bin/env bash
# Make sure Podman's Docker-compatible API answers as root at
# unix:///run/podman/podman.sock. Leaves a running service alone; otherwise
# installs Debian's podman (when it is missing) and starts
# `podman system service` in the background, then waits until the socket
# answers. Never touches the Docker engine (its daemon, /etc/docker, its
# iptables chains): the two run side by side.
#
# Then, with COPY_IMAGES=1 (the default), copies the runner's own images
# (runner/NAME:$IMAGE_TAG, NAME in $IMAGES; default all, tag latest) that
# Docker has and Podman lacks or holds older into Podman's store
# (docker save | podman load): the runner never pulls its own images, and
# Podman keeps a store of its own.
set -euo pipefail

log() { echo "ensure-podman: $*" >&2; }

SOCK=/run/podman/podman.sock
LOG=/var/log/podman-service.log

answers() { curl -fsS --max-time 5 --unix-socket "$SOCK" http://d/_ping >/dev/null 2>&1; }

if ! command -v podman >/dev/null 2>&1; then
  log "no podman found; installing Debian's podman (needs root and apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq podman catatonit >/dev/null
fi
# the runner starts every container with an init (Docker's --init): podman's is
# catatonit, which apt leaves out where tini (docker.io's) already fills the slot
if [ ! -x /usr/libexec/podman/catatonit ] && ! grep -qs '^init_path' /etc/containers/containers.conf; then
  log "installing catatonit (podman's container init)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq catatonit >/dev/null || { apt-get update -qq && apt-get install -y -qq catatonit >/dev/null; }
fi

# A host without systemd (a container, a plain VM): podman's defaults (the
# systemd cgroup manager, the journald event log) do not work there.
if [ ! -d /run/systemd/system ] && [ ! -e /etc/containers/containers.conf ]; then
  log "no systemd here: writing /etc/containers/containers.conf (cgroupfs, events to a file)"
  mkdir -p /etc/containers
  cat >/etc/containers/containers.conf <<'EOF'
# written by runner's scripts/ensure-podman.sh: a host without systemd
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
EOF
fi

# Without CAP_SYS_RESOURCE (podman in a container, a sandboxed VM) Podman cannot raise a container's open-files
# and process limits to its defaults (1048576) and every `docker run` without --ulimit fails ("error setting
# rlimit"). The runner gives both itself; for other clients (the tests' own containers) this host's limits become
# Podman's defaults.
capbnd="$(awk '/^CapBnd:/ {print $2}' /proc/self/status)"
if [ -n "$capbnd" ] && (( (0x$capbnd >> 24 & 1) == 0 )) && [ ! -e /etc/containers/containers.conf.d/runner-ulimits.conf ]; then
  nofile="$(ulimit -Hn)"; nproc="$(ulimit -Hu)"; pidmax="$(cat /proc/sys/kernel/pid_max)"
  if [ "$nproc" = unlimited ] || [ "$nproc" -gt "$pidmax" ]; then nproc="$pidmax"; fi
  log "no CAP_SYS_RESOURCE here: Podman's default limits become this host's (nofile $nofile, nproc $nproc)"
  mkdir -p /etc/containers/containers.conf.d
  printf '# written by scripts/ensure-podman.sh: no CAP_SYS_RESOURCE on this host\n[containers]\ndefault_ulimits = ["nofile=%s:%s", "nproc=%s:%s"]\n' \
    "$nofile" "$nofile" "$nproc" "$nproc" >/etc/containers/containers.conf.d/runner-ulimits.conf
fi

if ! answers; then
  log "starting podman system service in the background (log: $LOG)"
  mkdir -p "$(dirname "$SOCK")" /run/runner
  nohup podman system service --time=0 "unix://$SOCK" >"$LOG" 2>&1 &
  echo $! > /run/runner/podman.pid
  for _ in $(seq 1 60); do
    if answers; then break; fi
    sleep 1
  done
fi

if ! answers; then
  log "podman's API did not answer at $SOCK within 60 s; see $LOG"
  tail -n 20 "$LOG" >&2 || true
  exit 1
fi
log "Podman API is up at unix://$SOCK ($(podman version --format '{{.Server.Version}}' 2>/dev/null || podman --version))"

# A step's network is internal and must give the host no address (Docker: inhibit_ipv4). Podman's netavark
# gives the host the network's gateway address all the same, where a step would reach every service the host
# listens on at all addresses. The runner names those bridges rnri*: the host drops what comes in on them.
# (The INPUT chain only, a rule of its own: Docker's chains are left alone.)
for ipt in iptables ip6tables; do
  command -v "$ipt" >/dev/null 2>&1 || continue
  if ! "$ipt" -C INPUT -i 'rnri+' -j DROP 2>/dev/null; then
    log "$ipt: dropping what steps' isolated networks send the host (INPUT -i rnri+ -j DROP)"
    "$ipt" -I INPUT -i 'rnri+' -j DROP
  fi
  # A step reaches its gateway across its network's bridge. Where bridged traffic passes the FORWARD chain
  # (br_netfilter, which Docker loads) and its policy is DROP (Docker sets it), netavark lets an internal
  # network's traffic through nowhere: accepted here, within one such bridge only (as Docker does for its own).
  if ! "$ipt" -C FORWARD -m physdev --physdev-is-bridged -i 'rnri+' -o 'rnri+' -j ACCEPT 2>/dev/null; then
    log "$ipt: letting steps reach their gateways across their networks' bridges (FORWARD, bridged within rnri+)"
    "$ipt" -I FORWARD -m physdev --physdev-is-bridged -i 'rnri+' -o 'rnri+' -j ACCEPT
  fi
done

if [ "${COPY_IMAGES:-1}" = 1 ] && command -v docker >/dev/null 2>&1 && DOCKER_HOST= docker info >/dev/null 2>&1; then
  for name in ${IMAGES:-base toolchain gateway claude-code codex opencode runner}; do
    image="runner/$name:${IMAGE_TAG:-latest}"
    id="$(DOCKER_HOST= docker image inspect --format '{{.Id}}' "$image" 2>/dev/null | sed 's/^sha256://')" || continue
    [ -n "$id" ] || continue
    if [ "$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null)" = "$id" ]; then continue; fi
    log "copying $image from Docker's store into Podman's"
    DOCKER_HOST= docker save "$image" | podman load -q >/dev/null
  done
fi
