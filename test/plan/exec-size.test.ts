import assert from 'node:assert/strict';
import { test } from 'node:test';
import { execSizeProblem } from '../../src/plan/exec-size.js';

test('a value a process cannot be given is named, with what to do', () => {
  assert.equal(execSizeProblem({ cmd: ['sh', '-c', 'x'], env: { A: 'b'.repeat(100_000) } }), undefined);
  assert.match(execSizeProblem({ cmd: ['true'], env: { BIG: 'b'.repeat(1024 * 1024) } })!, /^its environment variable BIG is 1\.0m, over the 128k a program can take in one variable: write big values to a file/);
  assert.match(execSizeProblem({ cmd: ['sh'], env: { RUNNER_EXPR_0: 'b'.repeat(200_000) } })!, /RUNNER_EXPR_0 \(an expression of its run: script\)/);
  assert.match(execSizeProblem({ cmd: ['echo', 'a'.repeat(131_072)], env: {} })!, /^argument 1 of its command is 128k/);
  const many = Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`V${i}`, 'x'.repeat(100_000)]));
  assert.match(execSizeProblem({ cmd: ['true'], env: many })!, /^its command and environment come to 1\.1m, over the 1m a container can be given/);
});

test('secrets count as the variables they become; a name the prelude cannot carry is refused', () => {
  assert.match(execSizeProblem({ cmd: ['true'], env: {}, secretEnv: { TOKEN: 't'.repeat(200_000) } })!, /^its environment variable TOKEN is 195\.3k/);
  assert.match(execSizeProblem({ cmd: ['true'], env: {}, secretEnv: { TOKEN: 'a\0b' } })!, /TOKEN holds a NUL byte/);
  assert.match(execSizeProblem({ cmd: ['true'], env: {}, secretEnv: { RUNNER_SECRET_NAME: 'x' } })!, /secret name RUNNER_SECRET_NAME is the runner's own/);
  assert.equal(execSizeProblem({ cmd: ['true'], env: { A: 'b' }, secretEnv: { TOKEN: 'x' } }), undefined);
});
