#!/usr/bin/env bash
# Make sure Debian's docker-compose (Compose v1) is installed: the compose
# deployment's test runs it (and `docker compose`, v2, where the CLI has it).
set -euo pipefail

if command -v docker-compose >/dev/null 2>&1; then
  exit 0
fi
echo "ensure-compose: installing Debian's docker-compose (needs root and apt)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq docker-compose >/dev/null
docker-compose version --short >&2
