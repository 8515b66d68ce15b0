/**
 * The images steps run in, as a step gets them: a non-root uid, no network,
 * every capability dropped. The toolchain is there, and each agent CLI (the
 * real package from the npm registry) starts and says its version.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { execPipeline, git, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

function inStep(image: string, script: string): string {
  return execFileSync(
    'docker',
    ['run', '--rm', '--user', '65532:65532', '--network', 'none', '--cap-drop', 'ALL', '--security-opt', 'no-new-privileges', image, 'sh', '-ec', script],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

const TOOLCHAIN = 'node --version; npm --version; corepack --version >/dev/null; python3 --version; make --version | head -n1; cc --version | head -n1; c++ --version | head -n1; rg --version | head -n1; curl --version | head -n1; git --version';

for (const image of ['runner/toolchain:latest', 'runner/claude-code:latest', 'runner/codex:latest', 'runner/opencode:latest']) {
  test(`${image}: the toolchain, for any uid, without network`, () => {
    const out = inStep(image, TOOLCHAIN);
    assert.match(out, /^v20\./m, 'Node 20');
    for (const tool of [/^\d+\.\d+\.\d+$/m, /^Python 3\./m, /^GNU Make/m, /^cc .*\d/m, /^ripgrep /m, /^curl /m, /^git version/m]) assert.match(out, tool);
  });
}

test('runner/claude-code:latest: the real Claude Code CLI starts', () => {
  assert.match(inStep('runner/claude-code:latest', 'claude --version'), /^2\.\d+\.\d+ \(Claude Code\)/m);
});

test('runner/codex:latest: the real Codex CLI starts', () => {
  assert.match(inStep('runner/codex:latest', 'codex --version'), /^codex-cli \d+\.\d+\.\d+/m);
});

test('runner/opencode:latest: the real opencode CLI starts', () => {
  assert.match(inStep('runner/opencode:latest', 'opencode --version'), /^\d+\.\d+\.\d+$/m);
});

test("the README's test step: npm test in runner/toolchain, through the runner", async () => {
  const f = await fixture();
  execFileSync('sh', ['-c', `cd ${f.project} && printf '%s' '{"name":"fx","version":"1.0.0","scripts":{"test":"node test.js"}}' > package.json && echo "require('assert').equal(1 + 1, 2); console.log('tests pass')" > test.js`]);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'tests');
  const file = await writePipeline(
    f,
    `version: 1\nname: verify\nproject: { path: project, push: never }\nsteps:\n  - id: test\n    image: runner/toolchain:latest\n    run: npm test\n    verify: true\n`,
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /\[test\] tests pass/);
});
