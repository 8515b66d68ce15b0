#!/usr/bin/env bash
# Creates the project pipelines/implement-review.yaml works on in the rehearsal
# (make demo-agent): a small Node project with a TASK.md and a failing test, at
# .demo/agent-project, with a local bare remote. Remade on every call.
set -euo pipefail
cd "$(dirname "$0")/.."
P=.demo/agent-project
rm -rf "$P" .demo/agent-remote.git
mkdir -p .demo
git init -q --bare -b main .demo/agent-remote.git
git init -q -b main "$P"
cat > "$P/TASK.md" <<'MD'
# Task

Add `greet.js`, a module that exports `greet(name)`, returning `hello, <name>`.
`npm test` must pass.
MD
cat > "$P/package.json" <<'JSON'
{ "name": "agent-demo", "version": "1.0.0", "private": true, "scripts": { "test": "node test.js" } }
JSON
cat > "$P/test.js" <<'JS'
const assert = require('node:assert');
const { greet } = require('./greet');
assert.strictEqual(greet('world'), 'hello, world');
console.log('greet: ok');
JS
git -C "$P" add -A
git -C "$P" -c user.name=demo -c user.email=demo@localhost commit -q -m "a task and a failing test"
git -C "$P" remote add origin ../agent-remote.git
git -C "$P" push -q origin main
echo "demo-agent: created $P (remote: .demo/agent-remote.git)"
