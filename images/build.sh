#!/usr/bin/env bash
# Builds the images steps run in, on top of runner/base (images/base/build.sh),
# without any registry: runner/toolchain (git, Node 20 with npm, Python 3, make,
# C/C++, ripgrep, curl) and one image per supported agent CLI, installed from
# the npm registry at the pinned versions below: Claude Code, Codex, opencode;
# and runner/gateway, a step's gateway (the runner's dist/src/gateway, bundled into one file, on Node 20).
#
#   images/build.sh            build what is missing or out of date
#   FORCE=1 images/build.sh    rebuild all
#   IMAGES=gateway IMAGE_TAG=mine images/build.sh
#                              only those, as runner/NAME:mine (a branch's image
#                              beside the usual one: RUNNER_GATEWAY_IMAGE=runner/gateway:mine)
#
# Each image carries a hash of its recipe (Dockerfile, version, parent image):
# an edit rebuilds it and what is built on it; nothing else is rebuilt.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"

CLAUDE_CODE_VERSION=2.1.330
CODEX_VERSION=0.169.0
OPENCODE_VERSION=1.18.33

# build NAME DIR [VERSION]: docker build of images/DIR as runner/NAME:$IMAGE_TAG (latest)
build() {
  [[ -z "${IMAGES:-}" || " $IMAGES " == *" $1 "* ]] || return 0
  local tag="runner/$1:${IMAGE_TAG:-latest}" dir="$ROOT/images/$2" version="${3:-}"
  local parent; parent="$(sed -n 's/^FROM \([^ ]*\).*/\1/p' "$dir/Dockerfile" | head -n1)"
  local recipe; recipe="$({ cat "$dir/Dockerfile"; echo "$version"; docker image inspect -f '{{.Id}}' "$parent"; } | sha256sum | cut -c1-16)"
  if [[ "${FORCE:-0}" != 1 ]] && [[ "$(docker image inspect -f '{{index .Config.Labels "dev.runner.recipe"}}' "$tag" 2>/dev/null)" == "$recipe" ]]; then
    echo "images: $tag is up to date"
    return
  fi
  local ctx; ctx="$(mktemp -d /tmp/runner-image.XXXXXX)"
  cp "$dir/Dockerfile" "$ctx/"
  # The CA certificates this machine trusts (npm in the build reaches the registry through them).
  cp "${NODE_EXTRA_CA_CERTS:-/etc/ssl/certs/ca-certificates.crt}" "$ctx/build-ca.crt" 2>/dev/null || : >"$ctx/build-ca.crt"
  if [[ "$1" == gateway ]]; then
    # The gateway's own code, bundled with its libraries into one file (scripts/bundle-gateway.mjs), and this machine's Node 20.
    cp "$(readlink -f "$(command -v node)")" "$ctx/node"
    mkdir -p "$ctx/gateway"
    cp "$ROOT/dist/src/gateway/gateway-bundle.js" "$ctx/gateway/main.js"
    echo '{"type":"module"}' >"$ctx/gateway/package.json"
    # the swarm transfer helper's source, built into a static program in the image (images/gateway/transfer)
    cp "$ROOT/dist/src/gateway/runner-transfer.c" "$ctx/"
  fi
  if [[ "$1" == toolchain ]]; then
    # This machine's Node 20 and its npm (the image is Debian's bookworm, whose nodejs is 18).
    local node; node="$(readlink -f "$(command -v node)")"
    local npm; npm="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
    mkdir -p "$ctx/node/bin"
    cp "$node" "$ctx/node/bin/node"
    cp -r "$npm" "$ctx/node/npm"
    # corepack sits beside npm in a Node installation; without one, the image says so when asked for it
    if [[ -d "$(dirname "$npm")/corepack" ]]; then
      cp -r "$(dirname "$npm")/corepack" "$ctx/node/corepack"
    else
      mkdir -p "$ctx/node/corepack/dist"
      printf '#!/bin/sh\necho "corepack is not in this image: the Node that built it had none" >&2\nexit 1\n' >"$ctx/node/corepack/dist/corepack.js"
      chmod +x "$ctx/node/corepack/dist/corepack.js"
    fi
  fi
  echo "images: building $tag${version:+ ($version)}"
  local t0=$SECONDS
  if ! docker build --label "dev.runner.recipe=$recipe" ${version:+--label "dev.runner.version=$version" --build-arg VERSION="$version"} --tag "$tag" "$ctx" >"$ctx.log" 2>&1; then
    echo "images: building $tag failed; its output:" >&2
    cat "$ctx.log" >&2
    rm -rf "$ctx" "$ctx.log"
    exit 1
  fi
  rm -rf "$ctx" "$ctx.log"
  # a build stage (the gateway's helper) stays behind as an untagged image: not kept
  docker image prune -f --filter label=dev.runner.stage="$1-helper" >/dev/null
  echo "images: built $tag ($(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1/1e6}'), $((SECONDS - t0)) s)"
}

build toolchain toolchain
# The gateway's version is its code's hash: the runner checks it before a step uses the image (src/gateway/host/image.ts).
# The transfer helper's source is part of it (the build copies it beside the code), and so is the bundle the image
# runs (beside the code too): a library's new version changes the version as our code does.
[[ -f "$ROOT/dist/src/gateway/runner-transfer.c" && -f "$ROOT/dist/src/gateway/gateway-bundle.js" ]] || { echo "images: dist/src/gateway is missing or old: run make build first" >&2; exit 1; }
build gateway gateway "$(cd "$ROOT/dist/src/gateway" && LC_ALL=C ls *.js runner-transfer.c | LC_ALL=C sort | xargs cat | sha256sum | cut -c1-16)"
build claude-code claude-code "$CLAUDE_CODE_VERSION"
build codex codex "$CODEX_VERSION"
build opencode opencode "$OPENCODE_VERSION"
