/** A step gets only what its pipeline names; secrets are masked everywhere they could surface. */
import assert from 'node:assert/strict';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const SECRET = 'sup3r-s3cret-value-4711';

function withSecrets(steps: string): string {
  return pipelineYaml(steps).replace('steps:', 'secrets: [RUNNER_TEST_TOKEN, RUNNER_TEST_OTHER]\nsteps:');
}

/** Every file of the run's record, concatenated; patches are the step's work itself, as it wrote it. */
async function everythingRecorded(home: string, runId: string): Promise<string> {
  const dir = path.join(home, 'runs', runId);
  let all = '';
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile() && !e.name.endsWith('.patch')) all += await readFile(path.join(e.parentPath ?? (e as any).path, e.name), 'utf8');
  }
  return all;
}

test('a secret printed whole, in two halves, in an error and as an output is masked everywhere', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    withSecrets(`  - id: leaky
    secrets: [RUNNER_TEST_TOKEN]
    outputs: [echoed]
    run: |
      echo "whole: $RUNNER_TEST_TOKEN"
      half=$(printf %s "$RUNNER_TEST_TOKEN" | cut -c1-10)
      rest=$(printf %s "$RUNNER_TEST_TOKEN" | cut -c11-)
      printf 'halves: %s' "$half"; sleep 1; printf '%s\\n' "$rest"
      echo "summary=deployed with $RUNNER_TEST_TOKEN" >> "$RUNNER_OUTPUT"
      echo "echoed=$RUNNER_TEST_TOKEN" >> "$RUNNER_OUTPUT"
      echo "a token shape: ghp_abcdefghijklmnopqrstuvwxyz0123456789"
      echo "fatal: auth failed for token $RUNNER_TEST_TOKEN" >&2
      echo "$RUNNER_TEST_TOKEN" > token-in-a-file.txt
      exit 4
`),
  );
  const r = await execPipeline(f, file, [], { env: { RUNNER_TEST_TOKEN: SECRET, RUNNER_TEST_OTHER: 'other-value-1234' } });
  assert.equal(r.code, 1, r.stderr);
  const shown = r.stdout + r.stderr;
  assert.ok(!shown.includes(SECRET), 'not on the console');
  assert.match(shown, /\[leaky\] whole: \*\*\*/);
  assert.match(shown, /\[leaky\] halves: \*\*\*/);
  assert.match(shown, /\[leaky\] fatal: auth failed for token \*\*\*/);
  assert.match(shown, /\[leaky\] a token shape: \*\*\*/);
  const recorded = await everythingRecorded(f.home, r.json.runId);
  assert.ok(!recorded.includes(SECRET), 'not in run.json, events.jsonl or the step log');
  assert.ok(!recorded.includes('ghp_abcdefghij'), 'token shapes are masked in the record too');
  const log = git(f.project, 'log', '--format=%B', r.json.branch);
  assert.ok(!log.includes(SECRET), 'not in commit messages');
  assert.match(log, /step\/leaky \(runner\/base:latest\): deployed with \*\*\*/);
  // What a step writes into its files is its work: the runner commits it as it is.
  assert.equal(git(f.project, 'show', `${r.json.branch}:token-in-a-file.txt`), SECRET);
});

test('a secret reaches only the steps that name it; no host variable reaches any step', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    withSecrets(`  - id: named
    secrets: [RUNNER_TEST_TOKEN]
    run: test "$RUNNER_TEST_TOKEN" = "${SECRET}" && echo "has the token"
  - id: unnamed
    env: { VISIBLE: "yes" }
    run: env | cut -d= -f1 | sort > env-names.txt
`),
  );
  const r = await execPipeline(f, file, [], {
    env: { RUNNER_TEST_TOKEN: SECRET, RUNNER_TEST_OTHER: 'other-value-1234', RUNNER_HOST_ONLY: 'host-value', GIT_DIR: '/tmp/evil' },
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /\[named\] has the token/);
  const names = git(f.project, 'show', `${r.json.branch}:env-names.txt`).split('\n');
  for (const leaked of ['RUNNER_TEST_TOKEN', 'RUNNER_TEST_OTHER', 'RUNNER_HOST_ONLY', 'GIT_DIR', 'SSH_AUTH_SOCK', 'CI']) {
    assert.ok(!names.includes(leaked), `${leaked} does not reach the step`);
  }
  for (const expected of ['VISIBLE', 'RUNNER_RUN_ID', 'RUNNER_STEP_ID', 'RUNNER_OUTPUT', 'HOME']) {
    assert.ok(names.includes(expected), `${expected} is set`);
  }
});

test('--secrets-file supplies secrets in dotenv format, masked like any other', async () => {
  const f = await fixture();
  const secretsFile = path.join(f.root, 'secrets.env');
  await writeFile(secretsFile, `# for the test\nRUNNER_TEST_TOKEN="${SECRET}"\nexport RUNNER_TEST_OTHER=other-value-1234\n`);
  const file = await writePipeline(
    f,
    withSecrets(`  - id: use
    secrets: [RUNNER_TEST_TOKEN, RUNNER_TEST_OTHER]
    run: |
      test "$RUNNER_TEST_TOKEN" = "${SECRET}"
      echo "token $RUNNER_TEST_TOKEN other $RUNNER_TEST_OTHER"
`),
  );
  const r = await execPipeline(f, file, ['--secrets-file', secretsFile], { env: { RUNNER_TEST_TOKEN: '' } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /\[use\] token \*\*\* other \*\*\*/);
});

test('a named secret that is missing stops the run before any container starts', async () => {
  const f = await fixture();
  const file = await writePipeline(f, withSecrets(`  - id: a\n    secrets: [RUNNER_TEST_TOKEN]\n    run: "true"\n`));
  const r = await execPipeline(f, file, [], { env: { RUNNER_TEST_TOKEN: '' } });
  assert.equal(r.code, 2);
  assert.match(r.json.error.message, /secret RUNNER_TEST_TOKEN named by the pipeline is not set/);
});
