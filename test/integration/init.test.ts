/** runner init on small projects of each ecosystem it knows: a starter that validates, never an overwrite. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { projectsForThisFile, runCli } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const projects: Record<string, Record<string, string>> = {
  node: { 'package.json': '{"name":"n","version":"1.0.0","scripts":{"test":"node t.js","lint":"node lint.js"}}', 'package-lock.json': '{"lockfileVersion":3,"packages":{}}' },
  python: { 'pyproject.toml': '[project]\nname = "p"\n[project.optional-dependencies]\ntest = ["pytest"]\n', 'tests/test_x.py': 'def test_x():\n    assert True\n' },
  make: { Makefile: 'all:\n\tcc -o hello hello.c\ntest: all\n\t./hello\n', 'hello.c': 'int main(void){return 0;}\n' },
};
const expected: Record<string, RegExp> = {
  node: /npm ci --no-audit --no-fund\n\s+npm test\n\s+npm run lint/,
  python: /pip install --quiet -e '\.\[test\]'\n\s+\/tmp\/venv\/bin\/python -m pytest/,
  make: /run: \|\n\s+make test\n/,
};

for (const [kind, files] of Object.entries(projects)) {
  test(`runner init on a ${kind} project writes a starter that validates, and never overwrites it`, async () => {
    const f = await fixture();
    const dir = path.join(f.root, kind);
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), text);
    }
    const r = await runCli(['init', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, new RegExp(`a ${kind} project`));
    const starter = await readFile(path.join(dir, 'runner.yaml'), 'utf8');
    assert.match(starter, expected[kind]!);
    assert.match(starter, /workspace: persistent_directory/, 'not a git repository: a persistent directory starter');
    const v = await runCli(['validate', path.join(dir, 'runner.yaml')]);
    assert.equal(v.code, 0, v.stderr);
    const again = await runCli(['init', dir]);
    assert.equal(again.code, 2);
    assert.match(again.stderr, /runner\.yaml exists and is left as it is/);
  });
}

test('runner init in a git repository with --agent codex', async () => {
  const f = await fixture();
  const r = await runCli(['init', f.project, '--agent', 'codex', '--file', 'agent.yaml']);
  assert.equal(r.code, 0, r.stderr);
  const starter = await readFile(path.join(f.project, 'agent.yaml'), 'utf8');
  assert.match(starter, /use: codex/);
  assert.doesNotMatch(starter, /persistent_directory/);
  assert.ok(!existsSync(path.join(f.project, 'runner.yaml')));
});
