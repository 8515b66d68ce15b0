/**
 * A new user's first day, on fixture projects of our own: `runner init`
 * writes a starter, and the starter runs unchanged (only the agent's
 * base_url is added, to reach the scripted model) to a green verify, with
 * the packages coming from mirrors on a fake internet of the test's own
 * (--npm-registry, --pip-index). The task given with --input reaches the
 * agent; the real Claude Code CLI runs; init's trial fills the project's
 * cache, and both runs install from it (nothing downloaded from the mirror
 * again), while their steps, all at or after the agent, never write it.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ModelServer, type Turn } from '../fixtures/model-server.js';
import { startPackageMirrors, TINY_NPM, type PackageMirrors } from '../fixtures/package-mirrors.js';
import { git, projectsForThisFile, runCli, type Fixture } from '../fixtures/project.js';

const KEY = 'sk-ant-api03-scripted-init-test-000000000';
const WS = '/home/agent/run-workspace';
const fixture = projectsForThisFile();
let mirrors: PackageMirrors;
const servers: ModelServer[] = [];
before(() => {
  mirrors = startPackageMirrors();
});
after(async () => {
  await Promise.all(servers.map((s) => s.close()));
  mirrors?.close();
});

const stepLog = (f: Fixture, runId: string, step: string) => readFileSync(path.join(f.home, 'runs', runId, 'steps', `${step}.log`), 'utf8');
/** requests a mirror logged, as lines "GET /path HTTP/1.1 200" */
const requests = (name: 'npm.example' | 'pypi.example') => mirrors.logs(name).split('\n').filter((l) => /^[A-Z]+ \//.test(l));

/** A project of our own (a git repository owned by uid 1000, as a user's is) holding `files`, committed. */
async function projectWith(files: Record<string, string>): Promise<Fixture> {
  const f = await fixture({ owner: 1000 });
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(f.project, name), text);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'the project');
  execFileSync('chown', ['-R', '1000:1000', f.project]);
  return f;
}

/** `runner init` on the project; the starter it wrote, with only base_url added under the agent (as scripts/demo-agent.mjs does). */
async function initStarter(f: Fixture, server: ModelServer): Promise<{ file: string; starter: string }> {
  // the checks are tried from the mirrors too, in the runs' home: the trial (a step before any agent, the one the
  // starter has) fills the project's cache, which the runs' steps, all at or after the agent, read and never write
  const r = await runCli(['init', f.project, '--home', f.home, ...mirrors.flags]);
  assert.equal(r.code, 0, r.stderr);
  const file = path.join(f.project, 'runner.yaml');
  const starter = await readFile(file, 'utf8');
  const edited = starter.replace(/^( +)use: claude-code.*$/m, (line, indent: string) => `${line}\n${indent}base_url: ${server.url}`);
  assert.notEqual(edited, starter, `the starter names a claude-code agent:\n${starter}`);
  await writeFile(file, edited);
  return { file, starter };
}

function exec(f: Fixture, file: string, task: string) {
  return runCli(['exec', file, '--json', '--home', f.home, '--input', `task=${task}`, ...mirrors.flags], { env: { ANTHROPIC_API_KEY: KEY } });
}

/** What the model was sent by the agent loop, as text: the prompt is in it. */
const sentToModel = (server: ModelServer) => JSON.stringify(server.agentRequests().map((r) => r.body.messages));

test("npm: the starter runs unchanged to a green verify (npm ci, npm test) from the mirror, the task reaches the agent, and both runs install from the cache that init's trial filled", { timeout: 240_000 }, async () => {
  const f = await projectWith({
    'package.json': JSON.stringify({ name: 'greeter', version: '1.0.0', private: true, scripts: { test: 'node test.js' }, dependencies: { [TINY_NPM.name]: `^${TINY_NPM.version}` } }, null, 2),
    'package-lock.json': JSON.stringify(
      {
        name: 'greeter',
        version: '1.0.0',
        lockfileVersion: 3,
        requires: true,
        packages: {
          '': { name: 'greeter', version: '1.0.0', dependencies: { [TINY_NPM.name]: `^${TINY_NPM.version}` } },
          [`node_modules/${TINY_NPM.name}`]: { version: TINY_NPM.version, resolved: mirrors.lock.resolved, integrity: mirrors.lock.integrity, license: 'MIT' },
        },
      },
      null,
      2,
    ),
    // fails until shout.js exists: the task is to add it
    'test.js': "const assert = require('assert');\nconst { greet } = require('tiny-greet');\nconst shout = require('./shout.js');\nassert.strictEqual(shout(greet('ada')), 'HELLO, ADA!');\nconsole.log('tests passed');\n",
    '.gitignore': 'node_modules/\n',
  });
  // the same answers for both runs: add shout.js, run the tests as the prompt asks, say what changed
  const turns: Turn[] = [
    { tool: { name: 'Write', input: { file_path: `${WS}/shout.js`, content: "module.exports = (s) => s.toUpperCase() + '!';\n" } } },
    { tool: { name: 'Bash', input: { command: 'npm ci --no-audit --no-fund && npm test', description: 'run the tests' } } },
    { text: 'Added shout.js; npm test passes.' },
  ];
  const server = await ModelServer.start({ turns: [...turns, ...turns], usage: { input: 1000, output: 20 } });
  servers.push(server);
  const before0 = requests('npm.example').length;
  const { file, starter } = await initStarter(f, server);
  const initRequests = requests('npm.example').slice(before0);
  assert.ok(initRequests.some((l) => l.startsWith(`GET ${TINY_NPM.tarballPath} `) && l.endsWith(' 200')), `init's trial downloaded the tarball from the mirror:\n${initRequests.join('\n')}`);
  assert.match(starter, /npm ci --no-audit --no-fund\n\s+npm test\n/);
  assert.match(starter, /# npm test failed on the base commit \w+ \(exit 1\): .*Cannot find module '\.\/shout\.js'.*; kept: the tests are what the verify checks/, 'a failing test is the task here: it stays');
  assert.match(starter, /cache: \[npm\]/);

  const task = 'Make the failing test pass: add shout.js, which shouts a greeting (npm-task-7f3a).';
  const before1 = requests('npm.example').length;
  const t1 = Date.now();
  const first = await exec(f, file, task);
  const firstMs = Date.now() - t1;
  assert.equal(first.code, 0, `${first.stderr}\n${first.json?.runId ? stepLog(f, first.json.runId, "verify") : JSON.stringify(first.json)}`);
  assert.equal(first.json.status, 'succeeded');
  assert.equal(first.json.steps.implement.status, 'completed');
  assert.equal(first.json.steps.verify.status, 'completed');
  assert.equal(first.json.steps.verify.exitCode, 0);
  assert.equal(first.json.steps.implement.result, 'Added shout.js; npm test passes.');
  assert.ok(sentToModel(server).includes('npm-task-7f3a'), 'the task given with --input reached the agent');
  // the tool's output goes back to the model: the agent's own npm ci and npm test passed in its step
  assert.match(sentToModel(server), /added 1 package.*tests passed/, "the agent's npm ci && npm test, as the model was told of it");
  const verify1 = stepLog(f, first.json.runId, 'verify');
  // the verify (after the agent: it starts from the commits, node_modules removed) gets the tree init's trial kept
  assert.match(verify1, /verify after agent step implement: \d+ paths? git ignores removed first/);
  assert.match(verify1, /npm ci: node_modules restored from the installed-tree cache for this lockfile .*step try/);
  assert.match(verify1, /^tests passed$/m);
  assert.equal(git(f.project, 'diff', '--name-only', first.json.baseSha, first.json.headSha), 'shout.js', 'the run changed what the agent wrote, and the verify step committed nothing (node_modules is ignored)');
  const firstRequests = requests('npm.example').slice(before1);
  assert.deepEqual(firstRequests.filter((l) => l.includes('.tgz')), [], "the first run took the tarball from the cache init's trial filled");
  assert.match(verify1, /cache npm: read, not written \(it runs after agent step implement/, 'the verify after the agent does not write the cache');

  const before2 = requests('npm.example').length;
  const t2 = Date.now();
  const second = await exec(f, file, task);
  const secondMs = Date.now() - t2;
  assert.equal(second.code, 0, `${second.stderr}\n${second.json?.runId ? stepLog(f, second.json.runId, "verify") : JSON.stringify(second.json)}`);
  assert.equal(second.json.steps.verify.status, 'completed');
  const verify2 = stepLog(f, second.json.runId, 'verify');
  assert.match(verify2, /npm ci: node_modules restored from the installed-tree cache for this lockfile .*step try/);
  assert.match(verify2, /^tests passed$/m);
  const secondRequests = requests('npm.example').slice(before2);
  assert.deepEqual(secondRequests.filter((l) => l.includes('.tgz')), [], 'the second run took the tarball from the cache');
  const ls = await runCli(['cache', 'ls', '--project', f.project, '--home', f.home]);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, /npm/);
  // the user's checkout is as it was: the starter is the only new file
  assert.equal(git(f.project, 'status', '--porcelain'), '?? runner.yaml');
  process.stderr.write(
    `npm: first run ${firstMs} ms (mirror requests: ${firstRequests.length}), second ${secondMs} ms (mirror requests: ${secondRequests.length}: ${secondRequests.join('; ') || 'none'}); verify ${first.json.steps.verify.durationMs ?? '?'} / ${second.json.steps.verify.durationMs ?? '?'} ms\n`,
  );
});

test("Python: the starter runs unchanged to a green verify (a venv outside the worktree, pip install -r requirements.txt, unittest) from the index, and both runs install from the cache that init's trial filled", { timeout: 240_000 }, async () => {
  const f = await projectWith({
    'requirements.txt': 'runner-tiny==0.1.0\n',
    // fails until greeting.py exists: the task is to add it
    'test_greeting.py': 'import unittest\n\nimport runner_tiny\nfrom greeting import loud\n\n\nclass T(unittest.TestCase):\n    def test_loud(self):\n        self.assertEqual(loud(), runner_tiny.GREETING.upper())\n\n\nif __name__ == "__main__":\n    unittest.main()\n',
    '.gitignore': '__pycache__/\n',
  });
  // add greeting.py, run the tests as the prompt asks (the starter's own commands), say what changed
  const turns: Turn[] = [
    { tool: { name: 'Write', input: { file_path: `${WS}/greeting.py`, content: 'import runner_tiny\n\n\ndef loud():\n    return runner_tiny.GREETING.upper()\n' } } },
    { tool: { name: 'Bash', input: { command: 'python3 -m venv /tmp/venv && /tmp/venv/bin/pip install --quiet -r requirements.txt && /tmp/venv/bin/python -m unittest discover 2>&1', description: 'run the tests' } } },
    { text: 'Added greeting.py; the tests pass.' },
  ];
  const server = await ModelServer.start({ turns: [...turns, ...turns], usage: { input: 1000, output: 20 } });
  servers.push(server);
  const before0 = requests('pypi.example').length;
  const { file, starter } = await initStarter(f, server);
  const initRequests = requests('pypi.example').slice(before0);
  assert.ok(initRequests.some((l) => /^GET \/simple\/runner-tiny\/runner_tiny-0\.1\.0-py3-none-any\.whl HTTP\/1\.\d 200$/.test(l)), `init's trial downloaded the wheel from the index:\n${initRequests.join('\n')}`);
  assert.match(starter, /python3 -m venv \/tmp\/venv && \/tmp\/venv\/bin\/pip install --quiet -r requirements\.txt\n\s+\/tmp\/venv\/bin\/python -m unittest discover\n/);
  assert.match(starter, /cache: \[pip\]/);

  const task = 'Make the failing test pass: add greeting.py with loud() (py-task-91c2).';
  const before1 = requests('pypi.example').length;
  const t1 = Date.now();
  const first = await exec(f, file, task);
  const firstMs = Date.now() - t1;
  assert.equal(first.code, 0, `${first.stderr}\n${first.json?.runId ? stepLog(f, first.json.runId, "verify") : JSON.stringify(first.json)}\nthe index was asked:\n${requests('pypi.example').slice(before0).join('\n')}`);
  assert.equal(first.json.status, 'succeeded');
  assert.equal(first.json.steps.verify.status, 'completed');
  assert.ok(sentToModel(server).includes('py-task-91c2'), 'the task given with --input reached the agent');
  assert.equal(first.json.steps.implement.result, 'Added greeting.py; the tests pass.');
  // the tool's output goes back to the model: the agent's own install and tests passed in its step
  assert.match(sentToModel(server), /Ran 1 test.*OK/, "the agent's pip install && unittest, as the model was told of it");
  const verify1 = stepLog(f, first.json.runId, 'verify');
  assert.match(verify1, /Ran 1 test/);
  assert.match(verify1, /^OK$/m);
  assert.equal(git(f.project, 'diff', '--name-only', first.json.baseSha, first.json.headSha), 'greeting.py', 'the run changed what the agent wrote; the virtualenv, outside the worktree, was never committed');
  const firstRequests = requests('pypi.example').slice(before1);
  assert.deepEqual(firstRequests.filter((l) => l.includes('.whl')), [], "the first run took the wheel from the cache init's trial filled");

  const before2 = requests('pypi.example').length;
  const t2 = Date.now();
  const second = await exec(f, file, task);
  const secondMs = Date.now() - t2;
  assert.equal(second.code, 0, `${second.stderr}\n${second.json?.runId ? stepLog(f, second.json.runId, "verify") : JSON.stringify(second.json)}`);
  assert.equal(second.json.steps.verify.status, 'completed');
  assert.match(stepLog(f, second.json.runId, 'verify'), /^OK$/m);
  const secondRequests = requests('pypi.example').slice(before2);
  assert.deepEqual(secondRequests.filter((l) => l.includes('.whl')), [], 'the second run took the wheel from the cache');
  // the user's checkout is as it was: the starter is the only new file
  assert.equal(git(f.project, 'status', '--porcelain'), '?? runner.yaml');
  process.stderr.write(`pip: first run ${firstMs} ms (index requests: ${firstRequests.join('; ')}), second ${secondMs} ms (index requests: ${secondRequests.join('; ') || 'none'})\n`);
});
