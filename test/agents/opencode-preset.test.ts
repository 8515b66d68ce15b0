import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { planSteps } from '../../src/plan/step-plan.js';

test('use: opencode: run --format json, its calls home off (update check, model list, LSP downloads, its plugin install), base_url to its provider', () => {
  const [plan] = planSteps(
    parsePipeline(
      `version: 1\nname: p\nsecrets: [ANTHROPIC_API_KEY]\nagents:\n  c: { use: opencode, base_url: "http://gw:8080" }\nsteps:\n  - id: s\n    agent: c\n    prompt: go\n`,
      'p.yaml',
    ),
  );
  assert.equal(plan!.image, 'runner/opencode:latest');
  assert.equal(
    plan!.run,
    `mkdir -p "$HOME/.config/opencode" 2>/dev/null && chmod a-w "$HOME/.config/opencode" || true\n` +
      `opencode run --format json --auto --pure -m 'anthropic/claude-sonnet-4-5' -- "$RUNNER_PROMPT" < /dev/null > /home/agent/.runner/agent-result.json`,
  );
  assert.equal(plan!.env.OPENCODE_DISABLE_AUTOUPDATE, '1');
  assert.equal(plan!.env.OPENCODE_DISABLE_MODELS_FETCH, '1');
  assert.equal(plan!.env.OPENCODE_DISABLE_LSP_DOWNLOAD, '1');
  assert.deepEqual(JSON.parse(plan!.env.OPENCODE_CONFIG_CONTENT!), {
    autoupdate: false,
    share: 'disabled',
    provider: { anthropic: { options: { baseURL: 'http://runner-gateway:3128/v1' } } },
  });
});
