#!/usr/bin/env bash
# Builds runner/runner:latest, the runner's own image, without any registry:
# runner/base plus this machine's Node.js binary and the built runner with its
# production dependencies (from the npm registry).
#
#   images/runner/build.sh [TAG]      (default TAG: runner/runner:latest; needs make build and make images first)
set -euo pipefail

TAG="${1:-runner/runner:latest}"
ROOT="$(cd "$(dirname "$0")/../.." && pwd)"

if [[ ! -f "$ROOT/dist/runner/main.js" ]]; then
  echo "runner-image: $ROOT/dist is missing: run make build first" >&2
  exit 1
fi
NODE_BIN="$(readlink -f "$(command -v node)")"
if [[ "$("$NODE_BIN" -p 'process.versions.node.split(".")[0]')" -lt 20 ]]; then
  echo "runner-image: $NODE_BIN is Node.js $("$NODE_BIN" --version); the image needs 20 or later" >&2
  exit 1
fi

CTX="$(mktemp -d /tmp/runner-image.XXXXXX)"
trap 'rm -rf "$CTX"' EXIT
cp "$ROOT/images/runner/Dockerfile" "$CTX/"
cp "$NODE_BIN" "$CTX/node"
mkdir -p "$CTX/app/dist"
cp "$ROOT/package.json" "$ROOT/package-lock.json" "$CTX/app/"
cp -r "$ROOT/dist/src" "$ROOT/dist/runner" "$CTX/app/dist/"
echo "runner-image: installing production dependencies"
(cd "$CTX/app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error) >"$CTX.log" 2>&1 || {
  echo "runner-image: npm ci --omit=dev failed; its output:" >&2
  cat "$CTX.log" >&2
  rm -f "$CTX.log"
  exit 1
}

echo "runner-image: building $TAG"
docker build --tag "$TAG" "$CTX" >"$CTX.log" 2>&1 || {
  echo "runner-image: docker build failed; its output:" >&2
  cat "$CTX.log" >&2
  rm -f "$CTX.log"
  exit 1
}
rm -f "$CTX.log"
echo "runner-image: built $TAG ($(docker image inspect -f '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}'))"
