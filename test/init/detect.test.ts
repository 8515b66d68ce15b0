import assert from 'node:assert/strict';
import { test } from 'node:test';
import { detect } from '../../src/init/detect.js';
import { starterPipeline } from '../../src/init/starter.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const pkg = (scripts: Record<string, string>) => JSON.stringify({ name: 'x', scripts });

test('node: the package manager from the lockfile, install, test and lint from the scripts', () => {
  assert.deepEqual(detect({ names: ['package.json', 'package-lock.json'], packageJson: pkg({ test: 'vitest', lint: 'eslint .' }) }), {
    ecosystem: 'node', evidence: 'package.json and package-lock.json', packageManager: 'npm', install: 'npm ci --no-audit --no-fund', test: 'npm test', lint: 'npm run lint', registries: ['registry.npmjs.org'], cache: 'npm',
  });
  const pnpm = detect({ names: ['package.json', 'pnpm-lock.yaml'], packageJson: pkg({ test: 'jest' }) });
  assert.equal(pnpm.install, 'corepack pnpm install --frozen-lockfile');
  assert.equal(pnpm.test, 'corepack pnpm run test');
  assert.equal(detect({ names: ['package.json', 'yarn.lock'], packageJson: pkg({}) }).packageManager, 'yarn');
  assert.equal(detect({ names: ['package.json'], packageJson: pkg({ test: 'echo "Error: no test specified" && exit 1' }) }).test, undefined, "npm init's placeholder is no test");
});

test('python, make, and a folder with none of them', () => {
  const py = detect({ names: ['pyproject.toml', 'tests'], pyproject: '[project]\nname="x"\n[tool.ruff]\n' });
  assert.deepEqual([py.ecosystem, py.install, py.test, py.lint], ['python', 'python3 -m venv /tmp/venv && /tmp/venv/bin/pip install --quiet -e . pytest ruff', '/tmp/venv/bin/python -m pytest', '/tmp/venv/bin/ruff check .']);
  assert.deepEqual(py.registries, ['pypi.org', 'files.pythonhosted.org']);
  assert.match(detect({ names: ['requirements.txt'] }).install!, /pip install --quiet -r requirements\.txt$/);
  // the project's test needs: a requirement file for tests (pytest-cov for its --cov), or a test extra
  const withFile = detect({ names: ['pyproject.toml', '.pytest.ini', 'tests'], pyproject: '[project]\nname = "parse"\n', testRequirements: ['tests/requirements.txt'] });
  assert.equal(withFile.install, 'python3 -m venv /tmp/venv && /tmp/venv/bin/pip install --quiet -e . -r tests/requirements.txt');
  assert.equal(withFile.evidence, 'pyproject.toml and tests/requirements.txt');
  const withExtra = detect({ names: ['pyproject.toml'], pyproject: '[project]\nname="x"\n[project.optional-dependencies]\ndocs = ["sphinx"]\ntest = [\n  "pytest",\n  "pytest-cov",\n]\n[tool.pytest.ini_options]\n' });
  assert.equal(withExtra.install, "python3 -m venv /tmp/venv && /tmp/venv/bin/pip install --quiet -e '.[test]'");
  assert.deepEqual(detect({ names: ['Makefile'], makefile: 'build:\n\tcc x.c\ntest: build\n\t./t\nX := 1\n' }), { ecosystem: 'make', evidence: 'Makefile', test: 'make test' });
  assert.equal(detect({ names: ['notes.md'] }).ecosystem, 'unknown');
});

test('every starter is a valid pipeline', () => {
  for (const detected of [
    detect({ names: ['package.json', 'package-lock.json'], packageJson: pkg({ test: 'node t.js' }) }),
    detect({ names: ['requirements.txt'] }),
    detect({ names: ['notes.md'] }),
  ]) {
    for (const agent of ['claude-code', 'codex'] as const) {
      for (const git of [true, false]) {
        const text = starterPipeline({ name: 'demo', agent, git, detected });
        const p = parsePipeline(text, 'runner.yaml');
        assert.equal(p.agents?.coder?.use, agent);
        // the host's bundle is trusted by default: the starter does not send the user to name it (it once did)
        assert.match(text, /# Steps trust this machine's CA bundle/);
        assert.doesNotMatch(text, /--ca-file \/etc\/ssl/);
        assert.equal(p.project.workspace, git ? undefined : 'persistent_directory');
        assert.equal(p.steps.some((s) => s.verify), detected.test !== undefined || detected.install !== undefined);
        assert.equal(p.inputs?.task?.default, 'Do what TASK.md asks.', 'the task is an input, a committed TASK.md the default');
        if (git) assert.equal(p.project.push, 'never', 'push written out');
        if (detected.cache) assert.deepEqual(Object.keys(p.defaults?.cache ?? {}), [detected.cache], 'the install fills a cache the next run reads');
        const verify = p.steps.find((s) => s.verify);
        if (verify && detected.registries) {
          assert.deepEqual(verify.egress, detected.registries, 'the verify step reaches its registries through a gateway');
          assert.equal(verify.network, undefined);
        }
      }
    }
  }
});
