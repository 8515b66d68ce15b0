#!/usr/bin/env bash
# A three-node Docker swarm on this one machine, for trying the runner on a
# swarm without a second machine (docs/scale-out-lab.md).
#
#   scripts/swarm-lab.sh up [IMAGE...]   the host's engine as manager, workers lab-w1 and lab-w2
#                                        in network namespaces, a registry at $LAB_NET.1:5000;
#                                        loads the runner/ images (or $LAB_IMAGES; none: no
#                                        image) and IMAGE... into every worker
#   scripts/swarm-lab.sh load IMAGE...   loads more images into every worker (those that differ)
#   scripts/swarm-lab.sh status          nodes, and whether the lab is up
#   scripts/swarm-lab.sh down            removes the workers and everything the lab made;
#                                        leaves the host's swarm only if `up` created it
#
# Layout (every name starts with runner-lab):
#   host veth runner-lab0 at $LAB_NET.1/24 (the manager's address; workers and their tasks
#   reach the host there); namespace runner-lab-net holds the bridge br0 the host and the
#   workers are wired to; worker i lives in namespace runner-lab-wi at $LAB_NET.(10+i), its
#   engine on unix://$LAB_STATE_DIR/lab-wi.sock, its data under $LAB_DATA_DIR/lab-wi, its
#   containers under the cgroup runner-lab-wi. The registry (Debian's docker-registry, a plain
#   process) listens on $LAB_NET.1:$LAB_REGISTRY_PORT only, over TLS with a certificate of
#   the lab's own CA, which /etc/docker/certs.d/$LAB_NET.1:$LAB_REGISTRY_PORT/ca.crt makes
#   every engine here trust (the host's and the workers': no engine's config is changed);
#   its config, certificates and log under $LAB_STATE_DIR/registry, its storage under
#   $LAB_DATA_DIR/registry.
#
# Environment: LAB_IMAGES (images for `up`, space or comma separated; default: every local
# runner/* image; none: no image), LAB_WORKERS (2), LAB_NET (10.213.7, a /24 used only by the lab),
# LAB_REGISTRY_PORT (5000),
# LAB_ADDR_POOL (10.214.0.0/16, the swarm's overlay addresses), LAB_STATE_DIR
# (/run/runner-swarm-lab: sockets, pid files, exec roots), LAB_DATA_DIR
# (/var/lib/runner-swarm-lab: data roots, logs, the state file, which survives a reboot so
# that `down` still knows whether the host's swarm is the lab's).
set -euo pipefail

LAB_STATE_DIR=${LAB_STATE_DIR:-/run/runner-swarm-lab}
LAB_DATA_DIR=${LAB_DATA_DIR:-/var/lib/runner-swarm-lab}
LAB_NET=${LAB_NET:-10.213.7}
LAB_ADDR_POOL=${LAB_ADDR_POOL:-10.214.0.0/16}
LAB_WORKERS=${LAB_WORKERS:-2}
LAB_REGISTRY_PORT=${LAB_REGISTRY_PORT:-5000}

REPO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STATE_FILE=$LAB_DATA_DIR/state
NET_NS=runner-lab-net          # the namespace that holds the lab's bridge
HOST_IF=runner-lab0            # the host's end of its veth
HOST_ADDR=$LAB_NET.1
LABEL=runner-lab               # node label on the lab's workers (value: worker)
DOCKER_TIMEOUT=30
REGISTRY=$HOST_ADDR:$LAB_REGISTRY_PORT
REGISTRY_DIR=$LAB_STATE_DIR/registry    # config, CA, certificate, pid, log
REGISTRY_DATA=$LAB_DATA_DIR/registry    # the registry's storage
CERTS_D=/etc/docker/certs.d/$REGISTRY  # where every engine here looks for the CA of $REGISTRY

log() { echo "swarm-lab: $*"; }
warn() { echo "swarm-lab: warning: $*" >&2; }
die() { echo "swarm-lab: $*" >&2; exit 1; }

usage() {
  sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
}

# ---- names -----------------------------------------------------------------

worker_name() { echo "lab-w$1"; }
worker_ns() { echo "runner-lab-w$1"; }
worker_cg() { echo "runner-lab-w$1"; }
worker_addr() { echo "$LAB_NET.$((10 + $1))"; }
worker_sock() { echo "$LAB_STATE_DIR/lab-w$1.sock"; }
worker_pidfile() { echo "$LAB_STATE_DIR/lab-w$1.pid"; }
worker_exec_root() { echo "$LAB_STATE_DIR/lab-w$1"; }
worker_data_root() { echo "$LAB_DATA_DIR/lab-w$1"; }
worker_log() { echo "$LAB_DATA_DIR/lab-w$1.log"; }
wdocker() { local i=$1; shift; timeout "$DOCKER_TIMEOUT" docker -H "unix://$(worker_sock "$i")" "$@"; }

# Worker indexes: the configured ones plus any left over (namespaces, roots, state).
all_worker_indexes() {
  {
    seq 1 "$LAB_WORKERS"
    ip netns list 2>/dev/null | awk '{print $1}' | sed -n 's/^runner-lab-w\([0-9]\+\)$/\1/p' || true
    find "$LAB_DATA_DIR" "$LAB_STATE_DIR" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null \
      | sed -n 's/^lab-w\([0-9]\+\)\(\.sock\|\.pid\|\.log\)\{0,1\}$/\1/p' || true
    state_get_all | sed -n 's/^node_lab-w\([0-9]\+\)=.*/\1/p' || true
  } | sort -un
}

# ---- state file (key=value lines) ------------------------------------------

state_get() { [ -f "$STATE_FILE" ] && sed -n "s/^$1=//p" "$STATE_FILE" | tail -n 1 || true; }
state_get_all() { [ -f "$STATE_FILE" ] && cat "$STATE_FILE" || true; }
state_set() {
  mkdir -p "$LAB_DATA_DIR"
  local tmp=$STATE_FILE.tmp
  { state_get_all | grep -v "^$1=" || true; echo "$1=$2"; } >"$tmp"
  mv "$tmp" "$STATE_FILE"
}

# ---- small helpers ---------------------------------------------------------

ns_exists() { [ -e "/run/netns/$1" ]; }
host_swarm_state() { docker info -f '{{.Swarm.LocalNodeState}}' 2>/dev/null || echo unknown; }
host_is_manager() { [ "$(docker info -f '{{.Swarm.ControlAvailable}}' 2>/dev/null)" = true ]; }
host_cluster_id() { docker info -f '{{.Swarm.Cluster.ID}}' 2>/dev/null || true; }

# shellcheck disable=SC2086 # split on the dots
ip2int() { local IFS=.; set -- $1; echo $(( ($1 << 24) + ($2 << 16) + ($3 << 8) + $4 )); }
# cidr_overlap A/n B/m: true when the two ranges share an address.
cidr_overlap() {
  local a=${1%/*} an=${1#*/} b=${2%/*} bn=${2#*/}
  [ "$an" = "$1" ] && an=32
  [ "$bn" = "$2" ] && bn=32
  local n=$(( an < bn ? an : bn ))
  local mask=$(( n == 0 ? 0 : (0xffffffff << (32 - n)) & 0xffffffff ))
  [ $(( $(ip2int "$a") & mask )) -eq $(( $(ip2int "$b") & mask )) ]
}

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (it makes network namespaces and starts engines)"; }

# Debian packages for what the lab needs, installed only when missing.
ensure_tools() {
  local missing=() cmd pkg
  for cmd in ip:iproute2 nsenter:util-linux unshare:util-linux setsid:util-linux flock:util-linux \
      docker-registry:docker-registry openssl:openssl curl:curl ss:iproute2; do
    pkg=${cmd#*:}; cmd=${cmd%%:*}
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    log "installing ${missing[*]} from Debian's packages"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq "${missing[@]}" >/dev/null
  fi
  bash "$REPO_DIR/scripts/ensure-docker.sh"
  command -v dockerd >/dev/null 2>&1 || die "dockerd is not installed (scripts/ensure-docker.sh installs Debian's docker.io)"
}

# One up/load/down at a time: lock the script itself (nothing left behind). The engines
# it starts must not inherit the lock's descriptor (9<&- where they start).
take_lock() {
  exec 9<"${BASH_SOURCE[0]}"
  if ! flock -n 9; then
    log "waiting for another swarm-lab.sh (up, load or down) to finish"
    flock -w 300 9 || die "another swarm-lab.sh is still running after 300 s"
  fi
}

# ---- the lab network -------------------------------------------------------

check_addresses() {
  local dst
  # The lab /24 and the overlay pool must not meet a route the host already has.
  while read -r dst _; do
    [ "$dst" = default ] && continue
    case "$dst" in *[!0-9./]*) continue ;; esac
    if ip -4 -o route show "$dst" 2>/dev/null | grep -qw "dev $HOST_IF"; then continue; fi
    cidr_overlap "$dst" "$LAB_NET.0/24" && die "the lab network $LAB_NET.0/24 overlaps the host's route $dst (set LAB_NET)"
    cidr_overlap "$dst" "$LAB_ADDR_POOL" && die "the overlay pool $LAB_ADDR_POOL overlaps the host's route $dst (set LAB_ADDR_POOL)"
  done < <(ip -4 -o route show)
  return 0
}

net_up() {
  if [ ! -d /run/netns ] && [ -z "$(state_get netns_dir_created)" ]; then
    state_set netns_dir_created 1     # `ip netns add` makes /run/netns a mount point; down undoes it
  fi
  if ! ns_exists "$NET_NS"; then
    log "network: namespace $NET_NS with bridge br0"
    ip netns add "$NET_NS"
  fi
  ip -n "$NET_NS" link set dev lo up
  ip -n "$NET_NS" link show dev br0 >/dev/null 2>&1 || ip -n "$NET_NS" link add br0 type bridge
  ip -n "$NET_NS" link set dev br0 up
  if ! ip link show dev "$HOST_IF" >/dev/null 2>&1; then
    log "network: host veth $HOST_IF at $HOST_ADDR/24"
    ip link add "$HOST_IF" type veth peer name rl-host netns "$NET_NS"
  fi
  ip -n "$NET_NS" link set dev rl-host master br0 up
  ip -4 -o addr show dev "$HOST_IF" | grep -q " $HOST_ADDR/24 " || ip addr add "$HOST_ADDR/24" dev "$HOST_IF"
  ip link set dev "$HOST_IF" up
}

net_down() {
  if ip link show dev "$HOST_IF" >/dev/null 2>&1; then ip link del dev "$HOST_IF" || warn "could not remove $HOST_IF"; fi
  if ns_exists "$NET_NS"; then ip netns del "$NET_NS" || warn "could not remove namespace $NET_NS"; fi
  if [ "$(state_get netns_dir_created)" = 1 ] && [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ]; then
    while mountpoint -q /run/netns 2>/dev/null; do umount /run/netns 2>/dev/null || umount -l /run/netns || break; done
    rmdir /run/netns 2>/dev/null || true
  fi
}

# ---- workers ---------------------------------------------------------------

worker_pid() {
  local f pid
  f=$(worker_pidfile "$1")
  [ -f "$f" ] || return 1
  pid=$(cat "$f" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = dockerd ] && echo "$pid"
}

# The worker's engine answers, is in a swarm, and the host's engine (manager of the lab's
# swarm) knows it as a Ready node. (A worker's own `docker info` has no cluster ID.)
worker_healthy() {
  local i=$1 node_id st
  ns_exists "$(worker_ns "$i")" || return 1
  worker_pid "$i" >/dev/null || return 1
  host_is_manager || return 1
  [ -n "$(state_get cluster_id)" ] && [ "$(host_cluster_id)" = "$(state_get cluster_id)" ] || return 1
  read -r st node_id < <(wdocker "$i" info -f '{{.Swarm.LocalNodeState}} {{.Swarm.NodeID}}' 2>/dev/null || echo "- -")
  [ "$st" = active ] && [ -n "$node_id" ] || return 1
  [ "$(docker node inspect -f '{{.Status.State}}' "$node_id" 2>/dev/null)" = ready ]
}

worker_start() {
  local i=$1 name ns addr sock exec_root data_root pidfile logf
  name=$(worker_name "$i"); ns=$(worker_ns "$i"); addr=$(worker_addr "$i")
  sock=$(worker_sock "$i"); exec_root=$(worker_exec_root "$i"); data_root=$(worker_data_root "$i")
  pidfile=$(worker_pidfile "$i"); logf=$(worker_log "$i")

  log "$name: namespace $ns at $addr"
  ip netns add "$ns"
  ip -n "$ns" link set dev lo up
  if ip -n "$NET_NS" link show dev "rl-w$i" >/dev/null 2>&1; then ip -n "$NET_NS" link del dev "rl-w$i"; fi
  ip -n "$NET_NS" link add "rl-w$i" type veth peer name eth0 netns "$ns"
  ip -n "$NET_NS" link set dev "rl-w$i" master br0 up
  ip -n "$ns" addr add "$addr/24" dev eth0
  ip -n "$ns" link set dev eth0 up

  mkdir -p "$exec_root" "$data_root" "$LAB_STATE_DIR"
  # Its own (empty) config file, so that the host's /etc/docker/daemon.json is not read.
  echo '{}' >"$LAB_STATE_DIR/daemon.json"
  log "$name: starting its engine (unix://$sock, data $data_root, log $logf)"
  # nsenter --net (not `ip netns exec`, which remounts /sys and hides the cgroups);
  # unshare --uts for a hostname of its own, which becomes the node's name. It pulls a task's image
  # as a real node does (DOCKER_SERVICE_PREFER_OFFLINE_IMAGE would stop every pull, the registry's too);
  # with no route out, a pull by name fails at once and the engine uses the image it has.
  setsid nsenter --net="/run/netns/$ns" -- unshare --uts -- \
    sh -c 'echo "$1" >/proc/sys/kernel/hostname && shift && exec "$@"' sh "$name" \
    dockerd --config-file "$LAB_STATE_DIR/daemon.json" \
      --data-root "$data_root" --exec-root "$exec_root" \
      -H "unix://$sock" --pidfile "$pidfile" \
      --bridge none --iptables=true --cgroup-parent "$(worker_cg "$i")" \
      --containerd-namespace "runner-lab-w$i" --containerd-plugins-namespace "runner-lab-w$i-plugins" \
      </dev/null >"$logf" 2>&1 9<&- &
  local starter=$!
  for _ in $(seq 1 120); do
    if [ -S "$sock" ] && wdocker "$i" version >/dev/null 2>&1; then return 0; fi
    if ! kill -0 "$starter" 2>/dev/null; then break; fi
    sleep 0.25
  done
  tail -n 20 "$logf" >&2 || true
  die "$name: its engine did not answer on unix://$sock (log above, $logf)"
}

worker_join() {
  local i=$1 name token node_id state='' h st
  name=$(worker_name "$i")
  # A node of the same name left over from an earlier lab (now down) goes first.
  for node_id in $(docker node ls -q 2>/dev/null); do
    read -r h st < <(docker node inspect -f '{{.Description.Hostname}} {{.Status.State}}' "$node_id" 2>/dev/null || echo "- -")
    if [ "$h" = "$name" ] && [ "$st" != ready ]; then docker node rm --force "$node_id" >/dev/null 2>&1 || true; fi
  done
  token=$(docker swarm join-token -q worker)
  log "$name: joining the swarm at $HOST_ADDR:2377"
  wdocker "$i" swarm join --token "$token" --advertise-addr "$(worker_addr "$i")" \
    --listen-addr "$(worker_addr "$i"):2377" "$HOST_ADDR:2377" >/dev/null
  node_id=$(wdocker "$i" info -f '{{.Swarm.NodeID}}')
  state_set "node_$name" "$node_id"
  for _ in $(seq 1 120); do
    state=$(docker node inspect -f '{{.Status.State}}' "$node_id" 2>/dev/null || true)
    [ "$state" = ready ] && break
    sleep 0.25
  done
  [ "$state" = ready ] || die "$name: node $node_id is $state, not ready"
  docker node update --label-add "$LABEL=worker" "$node_id" >/dev/null
}

# Pids in the worker's namespace (its dockerd, containerd, shims) and in its cgroups
# (its containers).
worker_leftover_pids() {
  local i=$1 ns cg d
  ns=$(worker_ns "$i"); cg=$(worker_cg "$i")
  { if ns_exists "$ns"; then ip netns pids "$ns" 2>/dev/null || true; fi
    for d in /sys/fs/cgroup/*/"$cg" /sys/fs/cgroup/"$cg"; do
      if [ -d "$d" ]; then find "$d" -name cgroup.procs -exec cat {} + 2>/dev/null || true; fi
    done
    worker_pid "$i" 2>/dev/null || true
  } | sort -un | grep -v "^$$\$" || true
}

# Mount points under a directory, deepest first.
mounts_under() {
  local dir=$1
  awk -v d="$dir" '$5 == d || index($5, d "/") == 1 { print length($5), $5 }' /proc/self/mountinfo \
    | sort -rn | cut -d' ' -f2- | uniq
}

unmount_under() {
  local dir=$1 m
  for m in $(mounts_under "$dir"); do
    umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || warn "could not unmount $m"
  done
  [ -z "$(mounts_under "$dir")" ]
}

worker_down() {
  local i=$1 name ns sock pid pids d
  name=$(worker_name "$i"); ns=$(worker_ns "$i"); sock=$(worker_sock "$i")
  local found=0
  { ns_exists "$ns" || [ -e "$sock" ] || [ -d "$(worker_data_root "$i")" ] || [ -d "$(worker_exec_root "$i")" ] \
    || [ -n "$(worker_leftover_pids "$i")" ]; } && found=1
  [ "$found" = 1 ] || return 0
  log "$name: removing"
  if pid=$(worker_pid "$i") && [ -S "$sock" ]; then
    wdocker "$i" swarm leave --force >/dev/null 2>&1 || true
  fi
  if pid=$(worker_pid "$i"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 80); do [ -d "/proc/$pid" ] || break; sleep 0.25; done
  fi
  for _ in $(seq 1 40); do
    pids=$(worker_leftover_pids "$i")
    [ -z "$pids" ] && break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.25
  done
  [ -z "$(worker_leftover_pids "$i")" ] || warn "$name: processes still alive: $(worker_leftover_pids "$i" | tr '\n' ' ')"
  unmount_under "$(worker_exec_root "$i")" || warn "$name: mounts left under $(worker_exec_root "$i")"
  unmount_under "$(worker_data_root "$i")" || warn "$name: mounts left under $(worker_data_root "$i")"
  for d in /sys/fs/cgroup/*/"$(worker_cg "$i")" /sys/fs/cgroup/"$(worker_cg "$i")"; do
    [ -d "$d" ] && { find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || warn "could not remove cgroup $d"; }
  done
  if [ -z "$(mounts_under "$(worker_exec_root "$i")")" ] && [ -z "$(mounts_under "$(worker_data_root "$i")")" ]; then
    rm -rf "$(worker_exec_root "$i")" "$(worker_data_root "$i")"
  fi
  rm -f "$sock" "$(worker_pidfile "$i")" "$(worker_log "$i")"
  # The veth first: a deleted namespace's interfaces go away only later, asynchronously.
  if ns_exists "$NET_NS" && ip -n "$NET_NS" link show dev "rl-w$i" >/dev/null 2>&1; then
    ip -n "$NET_NS" link del dev "rl-w$i" || warn "could not remove rl-w$i"
  fi
  if ns_exists "$ns"; then ip netns del "$ns" || warn "could not remove namespace $ns"; fi
}

# ---- the registry ----------------------------------------------------------

registry_pid() {
  local pid
  [ -f "$REGISTRY_DIR/pid" ] || return 1
  pid=$(cat "$REGISTRY_DIR/pid" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = docker-registry ] && echo "$pid"
}

# Answers the registry API, over TLS, with the certificate the engines trust.
registry_healthy() {
  registry_pid >/dev/null && [ -f "$CERTS_D/ca.crt" ] \
    && curl -sf --max-time 5 --cacert "$CERTS_D/ca.crt" "https://$REGISTRY/v2/" >/dev/null 2>&1
}

# The lab's CA and the registry's certificate (for its address), made anew with each start.
registry_certs() {
  local d=$REGISTRY_DIR
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=runner swarm lab CA" \
    -keyout "$d/ca.key" -out "$d/ca.crt" >/dev/null 2>&1 || die "openssl could not make the lab's CA"
  openssl req -newkey rsa:2048 -nodes -subj "/CN=$HOST_ADDR" -keyout "$d/registry.key" -out "$d/registry.csr" >/dev/null 2>&1 \
    || die "openssl could not make the registry's key"
  printf 'subjectAltName=IP:%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' "$HOST_ADDR" >"$d/registry.ext"
  openssl x509 -req -in "$d/registry.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
    -extfile "$d/registry.ext" -out "$d/registry.crt" >/dev/null 2>&1 || die "openssl could not sign the registry's certificate"
  chmod 600 "$d/ca.key" "$d/registry.key"
}

registry_config() {
  cat <<CONFIG
# The lab's registry (scripts/swarm-lab.sh): the lab's address only, TLS, no auth.
version: 0.1
log:
  level: info
  fields:
    service: runner-lab-registry
storage:
  filesystem:
    rootdirectory: $REGISTRY_DATA
  delete:
    enabled: true
http:
  addr: $REGISTRY
  tls:
    certificate: $REGISTRY_DIR/registry.crt
    key: $REGISTRY_DIR/registry.key
  headers:
    X-Content-Type-Options: [nosniff]
CONFIG
}

registry_up() {
  if registry_healthy; then
    log "registry: up already at $REGISTRY"
    return 0
  fi
  registry_down
  # certs.d is the host's: a directory for this address that the lab did not make is someone's trust, left alone
  if [ -e "$CERTS_D" ] && [ "$(state_get registry_certs_d)" != 1 ]; then
    die "$CERTS_D exists and is not the lab's: remove it, or set LAB_REGISTRY_PORT to another port"
  fi
  if ss -ltnH 2>/dev/null | awk '{print $4}' | grep -qE "^($HOST_ADDR|0\.0\.0\.0|\*|\[::\]):$LAB_REGISTRY_PORT\$"; then
    die "port $LAB_REGISTRY_PORT is taken on $HOST_ADDR (or on every address): set LAB_REGISTRY_PORT"
  fi
  mkdir -p "$REGISTRY_DIR" "$REGISTRY_DATA"
  registry_certs
  registry_config >"$REGISTRY_DIR/config.yml"
  state_set registry_certs_d 1
  [ -d /etc/docker/certs.d ] || state_set certs_root_created 1
  mkdir -p "$CERTS_D"
  cp "$REGISTRY_DIR/ca.crt" "$CERTS_D/ca.crt"
  log "registry: docker-registry at $REGISTRY (TLS; the engines trust it through $CERTS_D/ca.crt; log $REGISTRY_DIR/log)"
  setsid docker-registry serve "$REGISTRY_DIR/config.yml" </dev/null >"$REGISTRY_DIR/log" 2>&1 9<&- &
  local starter=$!
  echo "$starter" >"$REGISTRY_DIR/pid"
  # Alive is the process, whatever its name says yet: right after the fork it is still bash or setsid until
  # docker-registry is exec'd, and reading its name then (registry_pid) gave up on a registry that was starting
  # (a loaded clean-clone CI run: "it did not answer" 3.8 s into up, every registry test of the file failed).
  for _ in $(seq 1 80); do
    registry_healthy && return 0
    kill -0 "$starter" 2>/dev/null || break
    sleep 0.25
  done
  tail -n 20 "$REGISTRY_DIR/log" >&2 || true
  die "registry: it did not answer at https://$REGISTRY/v2/ (log above)"
}

registry_down() {
  local pid
  if pid=$(registry_pid); then
    log "registry: stopping (pid $pid)"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 40); do [ -d "/proc/$pid" ] || break; sleep 0.25; done
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "$REGISTRY_DIR/pid"
  if [ "$(state_get registry_certs_d)" = 1 ]; then
    rm -rf "$CERTS_D"
    state_set registry_certs_d 0
  fi
  if [ "$(state_get certs_root_created)" = 1 ]; then
    rmdir /etc/docker/certs.d 2>/dev/null || true
    state_set certs_root_created 0
  fi
}

# ---- the manager -----------------------------------------------------------

# Refuses (before anything is built) when the host's engine is in a swarm that is not the lab's.
manager_check() {
  local st cluster
  st=$(host_swarm_state)
  cluster=$(host_cluster_id)
  case "$st" in
    inactive) ;;
    active)
      if [ -n "$cluster" ] && [ "$cluster" = "$(state_get cluster_id)" ] && host_is_manager; then
        :
      elif host_is_manager; then
        die "the host's engine is already the manager of a swarm that is not the lab's (cluster $cluster); the lab will not touch it. Leave it first (docker swarm leave --force) if it is yours to drop."
      else
        die "the host's engine is a worker in another swarm; the lab needs it as the manager of a swarm of its own. Leave that swarm first (docker swarm leave)."
      fi
      ;;
    *)
      die "the host's swarm state is '$st'; run 'scripts/swarm-lab.sh down' (if it is the lab's) or sort it out with docker swarm leave --force"
      ;;
  esac
}

# Leaves the host the manager of the lab's swarm (init only when it is in none).
manager_up() {
  manager_check
  if [ "$(host_swarm_state)" = inactive ]; then
    if docker network inspect docker_gwbridge >/dev/null 2>&1; then state_set gwbridge_existed 1; fi
    log "manager: docker swarm init --advertise-addr $HOST_ADDR (overlay pool $LAB_ADDR_POOL)"
    state_set created_swarm 1
    docker swarm init --advertise-addr "$HOST_ADDR" --listen-addr "$HOST_ADDR:2377" \
      --default-addr-pool "$LAB_ADDR_POOL" >/dev/null
    state_set cluster_id "$(host_cluster_id)"
  else
    log "manager: the host is the manager of the lab's swarm already ($(host_cluster_id))"
  fi
  local addr
  addr=$(docker info -f '{{.Swarm.NodeAddr}}')
  [ "$addr" = "$HOST_ADDR" ] || die "the lab's swarm manager advertises $addr, not $HOST_ADDR"
}

manager_down() {
  local st cluster node_id h label ids=()
  st=$(host_swarm_state)
  cluster=$(host_cluster_id)
  if host_is_manager; then
    for node_id in $(docker node ls -q 2>/dev/null); do
      read -r h label < <(docker node inspect -f "{{.Description.Hostname}} {{index .Spec.Labels \"$LABEL\"}}" "$node_id" 2>/dev/null || echo "- -")
      if [ "$label" = worker ] || state_get_all | grep -qx "node_[a-z0-9-]*=$node_id"; then ids+=("$node_id"); fi
    done
    if [ ${#ids[@]} -gt 0 ]; then
      log "manager: docker node rm --force ${ids[*]}"
      docker node rm --force "${ids[@]}" >/dev/null || warn "could not remove nodes ${ids[*]}"
    fi
  fi
  if [ "$(state_get created_swarm)" = 1 ]; then
    local ours=0
    if [ "$st" = active ] && [ -n "$cluster" ] && [ "$cluster" = "$(state_get cluster_id)" ]; then ours=1; fi
    # After a reboot or a failed init the manager may be in error/pending: still the lab's.
    if [ "$st" = error ] || [ "$st" = pending ] || [ "$st" = locked ]; then ours=1; fi
    if [ "$ours" = 1 ]; then
      log "manager: docker swarm leave --force (the lab created this swarm)"
      docker swarm leave --force >/dev/null || warn "docker swarm leave --force failed"
    elif [ "$st" = active ]; then
      warn "the host is in swarm $cluster, not the one the lab created; left alone"
    fi
    if [ "$(state_get gwbridge_existed)" != 1 ] && docker network inspect docker_gwbridge >/dev/null 2>&1 \
       && [ "$(host_swarm_state)" = inactive ]; then
      for _ in $(seq 1 20); do
        docker network rm docker_gwbridge >/dev/null 2>&1 && break
        sleep 0.5
      done
      if docker network inspect docker_gwbridge >/dev/null 2>&1; then warn "could not remove docker_gwbridge (still in use?)"; fi
    fi
  fi
}

# ---- images ----------------------------------------------------------------

default_images() {
  if [ "${LAB_IMAGES:-}" = none ]; then
    return 0
  elif [ -n "${LAB_IMAGES:-}" ]; then
    echo "$LAB_IMAGES" | tr ',' ' ' | tr -s ' ' '\n' | sed '/^$/d'
  else
    docker image ls --format '{{.Repository}}:{{.Tag}}' | awk -F: '$1 ~ /^runner\// && $2 != "<none>"' | sort -u
  fi
}

# load_group "IMAGE IMAGE..." WORKER...: one `docker save` of the images, teed into every
# one of the workers' `docker load` (shared layers travel once per worker).
load_group() {
  local -a need fifos=() loaders=()
  read -ra need <<<"$1"; shift
  local first=$1 i p rc=0 dir
  shift
  dir=$(mktemp -d "$LAB_STATE_DIR/load.XXXXXX")
  for i in "$@"; do
    mkfifo "$dir/w$i"
    docker -H "unix://$(worker_sock "$i")" load -q <"$dir/w$i" >/dev/null &
    loaders+=($!); fifos+=("$dir/w$i")
  done
  docker save "${need[@]}" | tee "${fifos[@]}" | docker -H "unix://$(worker_sock "$first")" load -q >/dev/null || rc=1
  for p in "${loaders[@]}"; do wait "$p" || rc=1; done
  rm -rf "$dir"
  return "$rc"
}

# load_images IMAGE...: into every worker, those whose ID differs from the worker's.
load_images() {
  local images=("$@") img i n failed=0 started
  [ ${#images[@]} -gt 0 ] || { log "no images to load"; return 0; }
  started=$(date +%s.%N)
  local -A host_id=() group=()
  for img in "${images[@]}"; do
    host_id[$img]=$(docker image inspect -f '{{.Id}}' "$img" 2>/dev/null) \
      || die "no image $img on the host's engine"
  done
  for i in $(seq 1 "$LAB_WORKERS"); do
    local need=()
    for img in "${images[@]}"; do
      [ "$(wdocker "$i" image inspect -f '{{.Id}}' "$img" 2>/dev/null || true)" = "${host_id[$img]}" ] || need+=("$img")
    done
    if [ ${#need[@]} -eq 0 ]; then
      log "$(worker_name "$i"): has the ${#images[@]} images already"
    else
      group["${need[*]}"]+="$i "
    fi
  done
  local pids=() names=() key
  for key in "${!group[@]}"; do
    names+=("$(for i in ${group[$key]}; do printf '%s ' "$(worker_name "$i")"; done)")
    log "${names[-1]% }: loading $key"
    # shellcheck disable=SC2086 # the worker indexes
    load_group "$key" ${group[$key]} &
    pids+=($!)
  done
  for n in "${!pids[@]}"; do
    if wait "${pids[$n]}"; then log "${names[$n]% }: images loaded"; else warn "${names[$n]% }: loading failed"; failed=1; fi
  done
  [ "$failed" = 0 ] || die "loading images failed (the lab stays up; run 'scripts/swarm-lab.sh load IMAGE...' again)"
  [ ${#pids[@]} -eq 0 ] || log "loading took $(elapsed "$started") s"
}

# ---- commands --------------------------------------------------------------

lab_leftovers() {
  [ -f "$STATE_FILE" ] || ns_exists "$NET_NS" || ip link show dev "$HOST_IF" >/dev/null 2>&1 \
    || [ -d "$LAB_STATE_DIR" ] || [ -d "$LAB_DATA_DIR" ]
}

UP_BUILDING=0
UP_FRESH=0
on_exit() {
  local rc=$?
  if [ "$UP_BUILDING" = 1 ] && [ "$rc" != 0 ]; then
    UP_BUILDING=0
    if [ "$UP_FRESH" = 1 ]; then
      warn "up failed (exit $rc); tearing down what it built"
      set +e
      do_down
    else
      warn "up failed (exit $rc); run 'scripts/swarm-lab.sh down' to remove the lab, or 'up' again"
    fi
  fi
  exit "$rc"
}

do_up() {
  local started i
  started=$(date +%s.%N)
  manager_check
  if [ "$(host_swarm_state)" = inactive ]; then check_addresses; fi
  lab_leftovers || UP_FRESH=1
  UP_BUILDING=1
  trap on_exit EXIT
  trap 'exit 130' INT TERM

  mkdir -p "$LAB_STATE_DIR" "$LAB_DATA_DIR"
  net_up
  manager_up
  for i in $(seq 1 "$LAB_WORKERS"); do
    if worker_healthy "$i"; then
      log "$(worker_name "$i"): up already"
      continue
    fi
    worker_down "$i"
    worker_start "$i"
    worker_join "$i"
  done
  # Workers beyond LAB_WORKERS, from an earlier and larger lab.
  for i in $(all_worker_indexes); do [ "$i" -le "$LAB_WORKERS" ] || worker_down "$i"; done
  state_set workers "$LAB_WORKERS"
  registry_up
  UP_BUILDING=0
  log "swarm ready after $(elapsed "$started") s"

  local images=()
  mapfile -t images < <({ default_images; printf '%s\n' "$@"; } | sed '/^$/d' | awk '!seen[$0]++')
  load_images "${images[@]}"

  echo
  docker node ls
  echo
  log "the lab is up ($(elapsed "$started") s): manager $(hostname) at $HOST_ADDR (the address workers and their tasks reach the host at)"
  for i in $(seq 1 "$LAB_WORKERS"); do
    log "  $(worker_name "$i"): $(worker_addr "$i"), its engine at unix://$(worker_sock "$i")"
  done
  log "  registry: $REGISTRY (TLS, trusted by every engine here through $CERTS_D/ca.crt)"
  log "use it:"
  log "  runner exec FILE --engine swarm"
  log "  runner images push --registry $REGISTRY; runner exec FILE --engine swarm --registry $REGISTRY"
  log "  docker service create --mode replicated-job --restart-condition none --constraint node.labels.$LABEL==worker runner/base:latest sh -c 'echo hello from \$(hostname)'"
  log "  scripts/swarm-lab.sh load IMAGE...   (after rebuilding an image)"
  log "  scripts/swarm-lab.sh status"
  log "  scripts/swarm-lab.sh down"
}

elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

do_load() {
  [ $# -gt 0 ] || die "usage: scripts/swarm-lab.sh load IMAGE..."
  local i
  for i in $(seq 1 "$LAB_WORKERS"); do
    worker_healthy "$i" || die "$(worker_name "$i") is not up; run 'scripts/swarm-lab.sh up' first"
  done
  load_images "$@"
}

do_down() {
  local started i
  started=$(date +%s.%N)
  # The workers in parallel (each engine's shutdown takes a few seconds).
  local pids=() p
  for i in $(all_worker_indexes); do worker_down "$i" & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p" || warn "a worker's tear-down failed (see above)"; done
  registry_down
  manager_down
  net_down
  for d in "$LAB_STATE_DIR" "$LAB_DATA_DIR"; do
    [ -d "$d" ] || continue
    if unmount_under "$d"; then rm -rf "$d"; else warn "mounts left under $d; not removed"; fi
  done
  log "the lab is down ($(elapsed "$started") s); host swarm state: $(host_swarm_state)"
}

do_status() {
  local i up=0 st
  st=$(host_swarm_state)
  log "host engine: swarm $st$( [ "$st" = active ] && echo ", cluster $(host_cluster_id)$(host_is_manager && echo ', manager')")"
  [ -f "$STATE_FILE" ] && log "lab state: $(tr '\n' ' ' <"$STATE_FILE")"
  for i in $(all_worker_indexes); do
    if worker_healthy "$i"; then
      [ "$i" -le "$LAB_WORKERS" ] && up=$((up + 1))
      log "$(worker_name "$i"): up ($(worker_addr "$i"), unix://$(worker_sock "$i"), pid $(worker_pid "$i"))"
    elif ns_exists "$(worker_ns "$i")" || worker_pid "$i" >/dev/null || [ -d "$(worker_data_root "$i")" ]; then
      log "$(worker_name "$i"): not up (leftovers: $(ns_exists "$(worker_ns "$i")" && echo 'namespace ')$(worker_pid "$i" >/dev/null && echo 'engine ')$([ -d "$(worker_data_root "$i")" ] && echo 'data'))"
    else
      log "$(worker_name "$i"): not up"
    fi
  done
  if registry_healthy; then log "registry: up at $REGISTRY (pid $(registry_pid))"; else log "registry: not up"; fi
  if host_is_manager; then echo; docker node ls; echo; fi
  if [ "$up" = "$LAB_WORKERS" ] && registry_healthy && [ -n "$(state_get cluster_id)" ] && [ "$(host_cluster_id)" = "$(state_get cluster_id)" ]; then
    log "the lab is up"
  elif lab_leftovers; then
    log "the lab is partly up: 'scripts/swarm-lab.sh up' completes it, 'down' removes it"
    return 3
  else
    log "the lab is down"
    return 3
  fi
}

main() {
  local cmd=${1:-}
  [ $# -gt 0 ] && shift
  case "$cmd" in
    up|load|down|status) ;;
    -h|--help|help) usage; exit 0 ;;
    *) usage >&2; exit 2 ;;
  esac
  [ ${#LAB_WORKERS} -eq 1 ] && [ "$LAB_WORKERS" -ge 1 ] 2>/dev/null || die "LAB_WORKERS must be 1..9"
  need_root
  ensure_tools
  [ "$cmd" = status ] || take_lock
  case "$cmd" in
    up) do_up "$@" ;;
    load) do_load "$@" ;;
    down) do_down ;;
    status) do_status ;;
  esac
}

main "$@"
