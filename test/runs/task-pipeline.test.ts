import assert from 'node:assert/strict';
import { test } from 'node:test';
import { taskPipeline } from '../../src/runs/task-pipeline.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { planSteps } from '../../src/plan/step-plan.js';

test('an agent task is one agent step on the project, the prompt an input, the verify command a verify step', () => {
  const text = taskPipeline({ name: 'task-0a1b2c3d', project: '/srv/p', agent: 'claude-code', verify: 'npm test', baseUrl: 'http://10.0.0.1:9000' });
  const p = parsePipeline(text, 'task.yaml');
  assert.equal(p.name, 'task-0a1b2c3d');
  assert.equal(p.project.path, '/srv/p');
  assert.equal(p.project.push, 'never');
  assert.deepEqual(p.secrets, ['ANTHROPIC_API_KEY']);
  assert.equal(p.agents!.coder!.base_url, 'http://10.0.0.1:9000');
  const [agent, verify] = planSteps(p);
  assert.equal(agent!.preset, 'claude-code');
  assert.equal(verify!.id, 'verify');
  assert.equal(p.steps[1]!.verify, true);
  assert.match(p.steps[0]!.prompt!, /^\$\{\{ inputs\.task \}\}/);
});

test('codex takes OPENAI_API_KEY; no verify, one step; the file names no prompt', () => {
  const p = parsePipeline(taskPipeline({ name: 'task-1', project: '/srv/p', agent: 'codex' }), 'task.yaml');
  assert.deepEqual(p.secrets, ['OPENAI_API_KEY']);
  assert.equal(p.steps.length, 1);
  assert.equal(p.agents!.coder!.base_url, undefined);
});

test('a verify command with quotes, colons and newlines stays one command, as written', () => {
  const cmd = 'echo "a: b" && test -f \'x y\'\nnpm test # done';
  const p = parsePipeline(taskPipeline({ name: 'task-2', project: '/srv/p', agent: 'opencode', verify: cmd }), 'task.yaml');
  assert.equal(p.steps[1]!.run, `${cmd}\n`);
});

test('an agent task on a model on this machine (--agent-base-url http://127.0.0.1:...) declares no key', () => {
  const p = parsePipeline(taskPipeline({ name: 'task-2', project: '/srv/p', agent: 'claude-code', baseUrl: 'http://127.0.0.1:11434' }), 'task.yaml');
  assert.equal(p.secrets, undefined);
  assert.equal(p.agents!.coder!.base_url, 'http://127.0.0.1:11434');
});
