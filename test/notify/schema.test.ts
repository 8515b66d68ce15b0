import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PipelineError } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const file = (notify: string, secrets = 'secrets: [WEBHOOK_SECRET]') => `version: 1
name: n
${secrets}
notify:
${notify}
steps:
  - id: a
    image: runner/base:latest
    run: "true"
`;

function problems(text: string): string[] {
  try {
    parsePipeline(text, 'x.yaml');
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  return [];
}

test('the issue\'s notify: entry loads, format json by default', () => {
  const p = parsePipeline(
    file(`  team:
    webhook: https://hooks.example.com/runner
    secret: WEBHOOK_SECRET
    on: [awaiting_approval, failed, succeeded, budget_exhausted]
  chat:
    webhook: http://127.0.0.1:9/hook
    on: [timed_out, canceled, error, interrupted, rejected]
    format: slack`),
    'x.yaml',
  );
  assert.deepEqual(p.notify, {
    team: { webhook: 'https://hooks.example.com/runner', secret: 'WEBHOOK_SECRET', on: ['awaiting_approval', 'failed', 'succeeded', 'budget_exhausted'], format: 'json' },
    chat: { webhook: 'http://127.0.0.1:9/hook', on: ['timed_out', 'canceled', 'error', 'interrupted', 'rejected'], format: 'slack' },
  });
});

test('an unknown status is refused with the ones there are', () => {
  const [p] = problems(file(`  team:\n    webhook: https://h.example.com/\n    on: [failure]`));
  assert.match(p!, /^notify\.team\.on\[0\]: unknown status "failure": expected one of succeeded, failed, budget_exhausted, timed_out, canceled, error, interrupted, awaiting_approval, rejected$/);
});

test('a secret not in secrets: is refused with the line that declares it', () => {
  assert.deepEqual(problems(file(`  team:\n    webhook: https://h.example.com/\n    secret: HOOK_KEY\n    on: [failed]`)), [
    'notify.team.secret: secret HOOK_KEY is not declared in the top-level secrets: list: add it there (secrets: [WEBHOOK_SECRET, HOOK_KEY])',
  ]);
  assert.match(problems(file(`  team:\n    webhook: https://h.example.com/\n    secret: WEBHOOK_SECRT\n    on: [failed]`))[0]!, /did you mean "WEBHOOK_SECRET"/);
});

test('a webhook that is not http(s), or holds a user or password, is refused with the fix', () => {
  assert.match(problems(file(`  team:\n    webhook: ftp://h.example.com/\n    on: [failed]`))[0]!, /^notify\.team\.webhook: expected an http:\/\/ or https:\/\/ URL, not ftp:/);
  assert.match(problems(file(`  team:\n    webhook: https://bot:hunter2@h.example.com/\n    on: [failed]`))[0]!, /cannot hold a user or password .*secret: NAME/);
  assert.match(problems(file(`  team:\n    webhook: not a url\n    on: [failed]`))[0]!, /expected a URL like https:/);
});

test('an entry without on:, an empty on:, a wrong format or an unknown key is refused', () => {
  assert.match(problems(file(`  team:\n    webhook: https://h.example.com/`))[0]!, /notify\.team: missing required key "on"/);
  assert.match(problems(file(`  team:\n    webhook: https://h.example.com/\n    on: []`))[0]!, /expected at least one status/);
  assert.match(problems(file(`  team:\n    webhook: https://h.example.com/\n    on: [failed]\n    format: teams`))[0]!, /expected format: json or format: slack/);
  assert.match(problems(file(`  team:\n    webhook: https://h.example.com/\n    on: [failed]\n    secrets: WEBHOOK_SECRET`))[0]!, /unknown key "secrets" \(did you mean "secret"\?\)/);
});
