#!/usr/bin/env bash
# pip 25 as a wheel, from Debian's own package (trixie's python3-pip-whl), for the test that replays the pip cache
# poisoning (test/integration/pip-poisoning.test.ts): Debian 12's pip is 23.0.1, older than the pip that trusts a
# cached built wheel on its origin.json (23.1). Kept in /var/cache/runner-test; fetched once, from deb.debian.org.
set -euo pipefail
dest=/var/cache/runner-test/pip-wheel
if ls "$dest"/pip-*.whl >/dev/null 2>&1; then exit 0; fi
mkdir -p "$dest"
if ! command -v curl >/dev/null || ! command -v xz >/dev/null; then
  apt-get update -qq
  apt-get install -y -qq curl xz-utils >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mirror=http://deb.debian.org/debian
curl -fsS --retry 3 -m 120 -o "$tmp/Packages.xz" "$mirror/dists/trixie/main/binary-all/Packages.xz"
xz -d "$tmp/Packages.xz"
file=$(awk '/^Package: /{p=$2} p=="python3-pip-whl" && /^Filename: /{print $2; exit}' "$tmp/Packages")
[ -n "$file" ] || { echo "ensure-pip-wheel: trixie's index names no python3-pip-whl" >&2; exit 1; }
sum=$(awk '/^Package: /{p=$2} p=="python3-pip-whl" && /^SHA256: /{print $2; exit}' "$tmp/Packages")
curl -fsS --retry 3 -m 300 -o "$tmp/pip.deb" "$mirror/$file"
echo "$sum  $tmp/pip.deb" | sha256sum -c --quiet
dpkg-deb -x "$tmp/pip.deb" "$tmp/x"
cp "$tmp"/x/usr/share/python-wheels/pip-*.whl "$dest/"
echo "ensure-pip-wheel: $(basename "$dest"/pip-*.whl) from $file"
