/** Names never become paths or commands; step output in a commit message is data. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, pipelineYaml, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('step ids and pipeline names built to escape are refused before anything is created', async () => {
  const f = await fixture();
  const cases = [
    pipelineYaml('  - id: "../../etc"\n    run: "true"\n'),
    pipelineYaml('  - id: "a;rm -rf ~"\n    run: "true"\n'),
    pipelineYaml('  - id: "line\\nbreak"\n    run: "true"\n'),
    pipelineYaml('  - id: ok\n    run: "true"\n').replace('name: it', 'name: "../../etc"'),
    pipelineYaml('  - id: ok\n    run: "true"\n').replace('name: it', 'name: "a;rm -rf ~"'),
    pipelineYaml('  - id: ok\n    run: "true"\n').replace('name: it', 'name: ".."'),
  ];
  for (const [i, body] of cases.entries()) {
    const file = await writePipeline(f, body, `escape-${i}.yaml`);
    const r = await runCli(['exec', file, '--home', f.home]);
    assert.equal(r.code, 2, `case ${i}: ${r.stderr}`);
    assert.match(r.stderr, /(steps\[0\]\.id|name): (expected a|a name cannot be)/);
  }
  assert.equal(existsSync(f.home), false, 'nothing was created');
  assert.equal(existsSync(path.join(f.root, 'etc')), false);
});

test('a summary with $(...) and backticks ends up in the commit message as text, and nothing runs', async () => {
  const f = await fixture();
  const marker = path.join(f.root, 'INJECTED');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: sly
    outputs: [payload]
    run: |
      echo x > x.txt
      echo 'summary=$(touch ${marker}) \`touch ${marker}\` "quoted" ; rm -rf /' >> "$RUNNER_OUTPUT"
      echo 'payload=$(touch ${marker})' >> "$RUNNER_OUTPUT"
  - id: uses
    env: { P: "\${{ steps.sly.outputs.payload }}" }
    run: |
      echo "\${{ steps.sly.outputs.payload }}" > payload.txt
      echo "$P" >> payload.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const subject = git(f.project, 'log', '--format=%s', '-1', r.json.steps.sly.commit);
  assert.equal(subject, `step/sly (runner/base:latest): $(touch ${marker}) \`touch ${marker}\` "quoted" ; rm -rf /`.slice(0, 'step/sly (runner/base:latest): '.length + 71) + (subject.endsWith('…') ? '…' : ''));
  assert.equal(git(f.project, 'show', `${r.json.branch}:payload.txt`), `$(touch ${marker})\n$(touch ${marker})`);
  assert.equal(existsSync(marker), false, 'no output was ever run as a command, on the host or in a step');
});
