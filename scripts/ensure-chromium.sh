#!/usr/bin/env bash
# Make sure Debian's Chromium is installed at /usr/bin/chromium: the dashboard
# tests drive it headless with playwright-core (no browser download).
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
echo "ensure-chromium: installing Debian's chromium for the dashboard tests (needs root and apt)" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium >/dev/null
/usr/bin/chromium --version >&2
