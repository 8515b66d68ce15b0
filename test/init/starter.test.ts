import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detect } from '../../src/init/detect.js';
import { starterPipeline } from '../../src/init/starter.js';
import { parsePipeline } from '../../src/pipeline/parse.js';
import { safeName } from '../../src/workspace/names.js';

const node = detect({ names: ['package.json', 'package-lock.json'], packageJson: JSON.stringify({ scripts: { test: 'node t.js' } }) });

test('attack: a project cloned into a folder whose name YAML reads as no string (true, null, 123, 1e3, .inf, 0x10) still gets a starter that loads, named so', () => {
  for (const folder of ['true', 'null', 'False', '123', '1e3', '.inf', '.NaN', '0x10', '0o7', 'demo', 'yes', '2001-12-14']) {
    const name = safeName(folder, 'pipeline name');
    const text = starterPipeline({ name, agent: 'claude-code', git: true, detected: node });
    assert.equal(parsePipeline(text, 'runner.yaml').name, folder, `the starter of a folder called ${folder}`);
  }
  assert.match(starterPipeline({ name: 'demo', agent: 'codex', git: true, detected: node }), /^name: demo$/m, 'a plain name stays plain');
});
