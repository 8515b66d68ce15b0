/**
 * What a person sees in the terminal at a gate, for real: `runner exec` in the
 * foreground waits (past ten seconds: no listener piles up while it polls),
 * says the gate's prompt once and when it ends; `runner diff` of a run that
 * changed nothing so far says so; `runner approve` from another process lets
 * it go on, the comment said once.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execPipeline, git, IMAGE, projectsForThisFile, runCli, until, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('runner exec waits at a gate without piling up listeners, says the prompt once; diff says a run changed nothing so far', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: gated
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE} }
steps:
  - id: look
    run: "true"
  - id: gate
    approval: { prompt: Go on with the write?, timeout: 30m }
  - id: write
    run: printf '%s' "$RUNNER_APPROVAL_COMMENT" > note.txt
`,
  );
  let runId = '';
  const exec = execPipeline(f, file, [], { onLine: (l) => (runId ||= /waits at gate gate/.test(l) ? (/run (\S+) waits at gate/.exec(l)?.[1] ?? '') : '') });
  await until('the exec waits at the gate', async () => (runId ? true : undefined), 60_000);

  const diff = await runCli(['diff', runId, '--home', f.home]);
  assert.equal(diff.code, 0);
  assert.equal(diff.stdout, '', 'stdout is the patch, empty');
  assert.match(diff.stderr, new RegExp(`run ${runId} changed nothing so far: its branch holds no change against its base`));

  await new Promise((r) => setTimeout(r, 12_000)); // polled every second: more than ten polls
  const approve = await runCli(['approve', runId, '--comment', 'yes, go.', '--home', f.home]);
  assert.equal(approve.code, 0, approve.stderr);
  const r = await exec;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json?.status, 'succeeded');
  assert.doesNotMatch(r.stderr, /MaxListenersExceededWarning/, 'one abort listener at a time while it waits');
  assert.equal(r.stderr.split('Go on with the write?').length - 1, 1, `the prompt said once:\n${r.stderr}`);
  assert.match(r.stderr, /waits at gate gate until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(in \d+m\d\ds; then it ends rejected, timed out\)/);
  assert.equal(r.stderr.split('yes, go.').length - 1, 1, `the comment said once:\n${r.stderr}`);
  assert.equal(git(f.project, 'show', `run/${runId}:note.txt`), 'yes, go.');
});
