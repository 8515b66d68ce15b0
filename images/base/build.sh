#!/usr/bin/env bash
# Builds runner/base:latest without any container registry: a minimal Debian
# bookworm root filesystem made by debootstrap (with git, bash, coreutils and
# ca-certificates), imported into the local Docker engine.
#
#   images/base/build.sh [TAG]      (default TAG: runner/base:latest)
#
# Skips the build when the image already exists; FORCE=1 rebuilds.
set -euo pipefail

TAG="${1:-runner/base:latest}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

# The image carries the hash of this script: an edit here rebuilds it.
RECIPE="$(sha256sum "$0" | cut -c1-16)"
if [[ "${FORCE:-0}" != 1 ]] &&
  [[ "$(docker image inspect -f '{{index .Config.Labels "dev.runner.recipe"}}' "$TAG" 2>/dev/null)" == "$RECIPE" ]]; then
  echo "images: $TAG is up to date (FORCE=1 to rebuild)"
  exit 0
fi

if ! command -v debootstrap >/dev/null 2>&1; then
  echo "images: installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

ROOTFS="$(mktemp -d /tmp/runner-base-rootfs.XXXXXX)"
trap 'rm -rf "$ROOTFS"' EXIT

echo "images: debootstrap bookworm into $ROOTFS (about a minute)"
debootstrap --variant=minbase --include=git,ca-certificates,procps \
  bookworm "$ROOTFS" "$MIRROR" >"$ROOTFS.log" 2>&1 || {
  echo "images: debootstrap failed; last lines of $ROOTFS.log:" >&2
  tail -n 20 "$ROOTFS.log" >&2
  exit 1
}
rm -f "$ROOTFS.log"

# Any uid the runner maps a step to can use /home/agent as its HOME.
mkdir -p "$ROOTFS/home/agent"
chmod 1777 "$ROOTFS/home/agent"
# git inside a step reads the worktree, which may belong to another uid than
# the step's: the repository is mounted read-only, so trusting it is safe.
printf '[safe]\n\tdirectory = *\n' > "$ROOTFS/etc/gitconfig"
# Keep the image small: apt caches and docs are of no use to a step.
rm -rf "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/lib/apt/lists/* \
  "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/*

echo "images: importing as $TAG"
tar -C "$ROOTFS" -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV HOME=/home/agent' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'WORKDIR /home/agent' \
  --change 'CMD ["bash"]' \
  --change "LABEL dev.runner.recipe=$RECIPE" \
  - "$TAG" >/dev/null
echo "images: built $TAG ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
