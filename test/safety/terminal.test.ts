/**
 * Step-made text never drives the terminal it is shown on: escape sequences,
 * carriage returns and file names with newlines a real container prints or
 * makes come out visible on every command, never as bytes a terminal acts on,
 * and never as a line that looks like the runner's own. The log keeps the bytes.
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, execPipeline, git, ISOLATION, pipelineYaml, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

// What a terminal acts on: C0 controls but tab and newline, DEL, C1.
const ACTS = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

function assertInert(what: string, text: string): void {
  const m = ACTS.exec(text);
  assert.equal(m, null, `${what} carries ${JSON.stringify(m?.[0])} at ${m?.index}: ${JSON.stringify(text.slice(Math.max(0, (m?.index ?? 0) - 40), (m?.index ?? 0) + 40))}`);
}

test('escape sequences, carriage returns and forged names are shown, never sent, on every command', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: paint
    outputs: [summary]
    run: |
      printf '\\033]0;owned title\\007\\n'
      printf '\\033]52;c;c2VjcmV0\\033\\\\\\n'
      printf '\\033[2J\\033[Hcleared\\n'
      printf 'harmless\\rrunner: \\342\\234\\223 step paint completed in 0.1s (commit deadbeef00)\\n'
      printf '\\302\\2332J eight-bit CSI\\n'
      printf 'esc \\033[31mred\\033[0m\\n' > colored.txt
      mkfifo "$(printf 'pipe\\nrunner: forged line')"
      printf 'summary=\\033]0;subject title\\007done\\n' >> "$RUNNER_OUTPUT"
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const runId = r.json.runId as string;

  // exec: step output on stdout (--json puts it on stderr), runner lines on stderr
  for (const [what, text] of [['exec stdout', r.stdout], ['exec stderr', r.stderr]] as const) assertInert(what, text);
  for (const line of r.stderr.split('\n').filter(Boolean)) {
    assert.match(line, /^(runner: |\[paint\] )/, `a line that is neither the runner's nor the step's: ${line}`);
  }
  const runnerLines = r.stderr.split('\n').filter((l) => l.startsWith('runner: '));
  assert.equal(runnerLines.filter((l) => l.includes('step paint completed')).length, 1, 'the step cannot forge the runner\'s completion line');
  assert.match(r.stderr, /\[paint\] harmless\\rrunner: ✓ step paint completed in 0\.1s \(commit deadbeef00\)/);
  assert.match(r.stderr, /\[paint\] \\x1b\]0;owned title\\x07/);
  // gVisor keeps a FIFO a step makes inside its sandbox (its gofer makes no
  // host node): nothing reaches the host for git to hang on, and the runner
  // has nothing to name. How it names such a file is its own code, the same
  // under either runtime, and proven by the runc run of this test.
  const fifoReachesHost = ISOLATION === 'runc';
  if (fifoReachesHost) assert.match(r.stderr, /runner: .*not committed \(git must not read them\): pipe\\nrunner: forged line/);
  else assert.doesNotMatch(r.stderr, /not committed|forged line/);
  assert.doesNotMatch(git(f.project, 'ls-tree', '-r', '--name-only', r.json.branch), /forged line/, 'the FIFO is on no commit');

  // logs: shown visibly; --raw and the file keep the bytes
  const logs = await runCli(['logs', runId, '--home', f.home]);
  assert.equal(logs.code, 0, logs.stderr);
  assertInert('runner logs', logs.stdout);
  assert.match(logs.stdout, /\[paint\] \\x1b\[2J\\x1b\[Hcleared/);
  const raw = await runCli(['logs', runId, '--home', f.home, '--raw']);
  assert.ok(raw.stdout.includes('\x1b[2J\x1b[Hcleared'), 'logs --raw prints the bytes');
  const kept = await readFile(path.join(f.home, 'runs', runId, 'steps', 'paint.log'), 'utf8');
  assert.ok(kept.includes('\x1b]0;owned title\x07') && kept.includes('harmless\rrunner:'), 'the log file is byte-exact');

  // runs show, diff
  const show = await runCli(['runs', 'show', runId, '--home', f.home]);
  assertInert('runs show', show.stdout);
  if (fifoReachesHost) assert.match(show.stdout, /pipe\\nrunner: forged line/);
  const diff = await runCli(['diff', runId, '--home', f.home]);
  assertInert('runner diff', diff.stdout);
  assert.match(diff.stdout, /\+esc \\x1b\[31mred\\x1b\[0m/);
  const rawDiff = await runCli(['diff', runId, '--home', f.home, '--raw']);
  assert.ok(rawDiff.stdout.includes('+esc \x1b[31mred\x1b[0m'), 'diff --raw prints the bytes');

  // the commit
  const [commit] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.equal(commit!.subject, 'step/paint (runner/base:latest): \\x1b]0;subject title\\x07done');
  assertInert('the commit message', git(f.project, 'log', '-1', '--format=%B', r.json.branch));
});
