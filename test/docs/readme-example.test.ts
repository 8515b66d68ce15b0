/** The README's pipeline example is a valid pipeline, as written. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { planSteps } from '../../src/plan/step-plan.js';

const README = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../../README.md');

test("the README's pipeline example validates and plans an agent step and a test step in the toolchain image", async () => {
  const text = await readFile(README, 'utf8');
  const section = text.slice(text.indexOf('## The pipeline file in brief'));
  const yaml = /```yaml\n([\s\S]*?)```/.exec(section)?.[1];
  assert.ok(yaml, 'the section has a yaml block');
  const [design, testStep] = planSteps(parsePipeline(yaml, 'README.md'));
  assert.equal(design!.preset, 'claude-code');
  assert.equal(design!.image, 'runner/claude-code:latest');
  assert.equal(testStep!.image, 'runner/toolchain:latest');
});
