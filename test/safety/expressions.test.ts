/** An input or an output never becomes code through command:: spliced expressions are refused at load, whole ones arrive as one argument. */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, IMAGE, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const file = (command: string) => `version: 1
name: inject
project: { path: project, push: never }
defaults: { image: ${IMAGE} }
inputs: { x: { default: hello } }
steps:
  - id: s
    command: ${command}
`;

test('every rewording of a shell -c script with an expression in it is refused by validate and exec, before any container', async () => {
  const f = await fixture();
  const forms = [
    '["sh", "-Cc", "echo ${{ inputs.x }}"]',
    '["bash", "-c", "-e", "echo ${{ inputs.x }}"]',
    '["sh", "-c", "--", "echo ${{ inputs.x }}"]',
    '["env", "-i", "sh", "-c", "echo ${{ inputs.x }}"]',
    '["timeout", "10", "sh", "-c", "echo ${{ inputs.x }}"]',
    '["python3", "-c", "print(\'${{ inputs.x }}\')"]',
    '["node", "-e", "console.log(\'${{ inputs.x }}\')"]',
  ];
  for (const form of forms) {
    const p = await writePipeline(f, file(form));
    const v = await runCli(['validate', p]);
    assert.equal(v.code, 2, `${form}: ${v.stdout}${v.stderr}`);
    assert.match(v.stderr, /pipeline\.yaml:8:\d+ steps\[0\]\.command\[\d\]: in command: an expression must be a whole argument/);
    const r = await execPipeline(f, p, ['--input', 'x=$(id)']);
    assert.equal(r.code, 2, `${form}: ${r.stderr}`);
    assert.ok(!r.json || r.json.runId === null, 'no run was made');
  }
});

test('a whole-argument expression reaches the program as exactly one argument: $(id) stays text', async () => {
  const f = await fixture();
  const p = await writePipeline(f, file('["sh", "-c", "printf \'[%s]\\\\n\' \\"$@\\"", "sh", "${{ inputs.x }}"]'));
  const r = await execPipeline(f, p, ['--input', 'x=$(id) `id` ; id'], { env: {} });
  assert.equal(r.code, 0, r.stderr);
  const log = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 's.log'), 'utf8');
  assert.equal(log, '[$(id) `id` ; id]\n');
});
