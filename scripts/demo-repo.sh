#!/usr/bin/env bash
# Creates the demo project for pipelines/hello.yaml: a small git repository at
# .demo/project with a local bare remote .demo/remote.git as `origin`, so the
# run's push is real. Leaves an existing demo project alone (FORCE=1 remakes it).
set -euo pipefail
cd "$(dirname "$0")/.."
DEMO=.demo
if [[ "${FORCE:-0}" != 1 && -d "$DEMO/project/.git" ]]; then
  echo "demo: $DEMO/project already exists (FORCE=1 to remake it)"
  exit 0
fi
rm -rf "$DEMO"
mkdir -p "$DEMO"
git init -q --bare -b main "$DEMO/remote.git"
git init -q -b main "$DEMO/project"
cd "$DEMO/project"
cat > README.md <<'MD'
# demo project

A tiny project that `runner exec pipelines/hello.yaml` works on.
MD
printf 'apples\npears\nplums\n' > fruit.txt
git add -A
git -c user.name=demo -c user.email=demo@localhost commit -q -m "initial commit"
git remote add origin ../remote.git
git push -q origin main
echo "demo: created $DEMO/project (remote: $DEMO/remote.git)"
