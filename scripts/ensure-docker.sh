#!/usr/bin/env bash
# Make sure a Docker engine answers. Leaves a running engine alone; otherwise
# installs Debian's docker.io (when dockerd is missing) and starts dockerd in
# the background, then waits until `docker info` answers.
set -euo pipefail

log() { echo "ensure-docker: $*" >&2; }

if docker info >/dev/null 2>&1; then
  exit 0
fi

if ! command -v dockerd >/dev/null 2>&1; then
  log "no Docker engine found; installing Debian's docker.io (needs root and apt)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq docker.io >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  log "starting dockerd in the background (log: /var/log/dockerd.log)"
  nohup dockerd >/var/log/dockerd.log 2>&1 &
  # ensure-gvisor.sh changes the configuration only of an engine started here
  mkdir -p /run/runner && echo $! > /run/runner/dockerd.pid
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then break; fi
    sleep 1
  done
fi

if ! docker info >/dev/null 2>&1; then
  log "dockerd did not answer within 60 s; see /var/log/dockerd.log"
  tail -n 20 /var/log/dockerd.log >&2 || true
  exit 1
fi
log "Docker engine is up ($(docker version --format '{{.Server.Version}}'))"
