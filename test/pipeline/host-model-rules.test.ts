/** The rules for an agent whose base_url is this machine (src/pipeline/rules.ts): no key needed behind its gateway; none reachable on a network of its own. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PipelineError, formatPipelineIssue } from '../../src/common/errors.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const file = (agent: string, top = '') => `version: 1
name: local
project: { path: ../app }
${top}agents:
  coder:
    use: claude-code
${agent}
steps:
  - id: implement
    agent: coder
    prompt: Do it.
`;

function problems(text: string): string[] {
  try {
    parsePipeline(text, 'x.yaml');
  } catch (err) {
    assert.ok(err instanceof PipelineError, String(err));
    return err.issues.map((i) => formatPipelineIssue('x.yaml', i));
  }
  return [];
}

test('a model on this machine needs no key: no secret to declare', () => {
  for (const url of ['http://127.0.0.1:11434', 'http://localhost:8000/v1', 'http://host.docker.internal:11434']) {
    assert.deepEqual(problems(file(`    base_url: ${url}`)), [], url);
  }
  // one that wants a key gets the one declared, as any other model
  assert.deepEqual(problems(file('    base_url: http://127.0.0.1:8000', 'secrets: [ANTHROPIC_API_KEY]\n')), []);
});

test('a hosted model, or any other host, still needs its key', () => {
  for (const url of ['https://api.anthropic.com', 'http://192.168.1.5:11434']) {
    const p = problems(file(`    base_url: ${url}`));
    assert.equal(p.length, 1, url);
    assert.match(p[0]!, /needs one of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN/);
  }
  assert.match(problems(file(''))[0]!, /needs one of ANTHROPIC_API_KEY/);
});

test("an agent on a network of its own cannot reach a model on this machine: said, at its base_url", () => {
  const p = problems(file('    base_url: http://127.0.0.1:11434\n    network: bridge', 'secrets: [ANTHROPIC_API_KEY]\n'));
  assert.equal(p.length, 1, p.join('\n'));
  assert.match(p[0]!, /agents\.coder\.base_url: agent coder's base_url http:\/\/127\.0\.0\.1:11434 is this machine, which a step on network: bridge does not reach .*drop network:/);
});
