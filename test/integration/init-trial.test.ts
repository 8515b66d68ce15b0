/**
 * `runner init` tries the checks it proposes on the project as committed, in
 * the runner's own sandbox (a run of its own, packages from a mirror on a fake
 * internet of the test's), before it proposes them: on a project of our own
 * whose `npm run lint` is broken (eslint, never installed: "not found") and
 * whose `npm test` passes, the starter leaves the lint out with a comment that
 * says why, and runs unchanged (only the agent's base_url added, to reach the
 * scripted model; the real Claude Code CLI) to a green verify.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { startPackageMirrors, type PackageMirrors } from '../fixtures/package-mirrors.js';
import { git, projectsForThisFile, runCli, type Fixture } from '../fixtures/project.js';
import { schemaTakesDevcontainer } from '../../src/init/devcontainer-image.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const KEY = 'sk-ant-api03-scripted-init-trial-0000000';
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

/** A node project of our own (owned by uid 1000, as a user's is): npm test passes, npm run lint runs an eslint it never installs. */
async function lintBrokenProject(): Promise<Fixture> {
  const f = await fixture({ owner: 1000 });
  const files: Record<string, string> = {
    'package.json': JSON.stringify({ name: 'tidy', version: '1.0.0', private: true, scripts: { test: 'node test.js', lint: 'eslint .' } }, null, 2),
    'package-lock.json': JSON.stringify({ name: 'tidy', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'tidy', version: '1.0.0' } } }, null, 2),
    'test.js': "require('assert').strictEqual(1 + 1, 2);\nconsole.log('tests passed');\n",
    '.gitignore': 'node_modules/\n',
  };
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(f.project, name), text);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'the project');
  execFileSync('chown', ['-R', '1000:1000', f.project]);
  return f;
}

test('init leaves a lint that fails before any change out of the starter, saying why, and the starter runs to a green verify', { timeout: 300_000 }, async () => {
  const f = await lintBrokenProject();
  const base = git(f.project, 'rev-parse', 'HEAD');
  const init = await runCli(['init', f.project, '--home', f.home, ...mirrors.flags]);
  assert.equal(init.code, 0, init.stderr);
  // the trial's progress, as it ran
  assert.match(init.stderr, /trying npm test and npm run lint on the project's current commit, in the runner's sandbox/);
  assert.match(init.stderr, /\[try\] runner init: trying the lint: npm run lint/);
  assert.match(init.stderr, /\[try\] tests passed/);
  assert.match(init.stdout, /verified by npm test \(left out, failing before any change: npm run lint; the file says why\)/);
  const file = path.join(f.project, 'runner.yaml');
  const starter = await readFile(file, 'utf8');
  const comment = new RegExp(`\\n {6}# npm run lint failed on the base commit ${base.slice(0, 10)} \\(exit 127\\): sh: 1: eslint: not found; left out \\(runner logs (\\S+) --step try --home ${f.home.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\)\\n {6}# npm run lint\\n`);
  assert.match(starter, comment, starter);
  assert.match(starter, /run: \|\n {6}npm ci --no-audit --no-fund\n {6}npm test\n {6}#/, 'the install and the test stay');
  // the trial is a run of the home's, its log the evidence; its branch, which held nothing, is gone; the checkout is untouched
  const trialRun = comment.exec(starter)![1]!;
  const logs = await runCli(['logs', trialRun, '--step', 'try', '--home', f.home]);
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /eslint: not found/);
  assert.equal(git(f.project, 'branch', '--list', 'run/*'), '');
  assert.equal(git(f.project, 'status', '--porcelain'), '?? runner.yaml');
  const trialRecord = JSON.parse(readFileSync(path.join(f.home, 'runs', trialRun, 'run.json'), 'utf8'));
  assert.equal(trialRecord.baseSha, base);

  // the starter, with only the agent's base_url added, runs green: the lint left out, the test passing
  const server = await ModelServer.start({
    turns: [
      { tool: { name: 'Write', input: { file_path: `${WS}/NOTES.md`, content: 'tidy: notes\n' } } },
      { text: 'Added NOTES.md.' },
    ],
    usage: { input: 1000, output: 20 },
  });
  servers.push(server);
  await writeFile(file, starter.replace(/^( +)use: claude-code.*$/m, (line, indent: string) => `${line}\n${indent}base_url: ${server.url}`));
  const run = await runCli(['exec', file, '--json', '--home', f.home, '--input', 'task=Add a NOTES.md', ...mirrors.flags], { env: { ANTHROPIC_API_KEY: KEY } });
  const verifyLog = run.json?.runId ? readFileSync(path.join(f.home, 'runs', run.json.runId, 'steps', 'verify.log'), 'utf8') : '';
  assert.equal(run.code, 0, `${run.stderr}\n${verifyLog}`);
  assert.equal(run.json.status, 'succeeded');
  assert.equal(run.json.steps.verify.status, 'completed');
  assert.match(verifyLog, /^tests passed$/m);
  assert.doesNotMatch(verifyLog, /eslint/, 'the lint left out did not run');
});

test('attack: a check that leaves a process behind, writing files after the trial cleans up, holds init no longer and leaves no branch in the project', { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const files: Record<string, string> = {
    // the test passes and leaves a writer behind it: its pipe held open (init waited for it to its 20m timeout), and
    // files made again as fast as the trial's clean-up removes them, so that the trial's step committed one
    'package.json': JSON.stringify({ name: 'sly', version: '1.0.0', private: true, scripts: { test: 'node test.js' } }, null, 2),
    'package-lock.json': JSON.stringify({ name: 'sly', version: '1.0.0', lockfileVersion: 3, requires: true, packages: { '': { name: 'sly', version: '1.0.0' } } }, null, 2),
    'test.js': "require('child_process').spawn('sh', ['-c', 'while :; do echo planted > planted.txt; done'], { stdio: 'inherit', detached: true }).unref();\nconsole.log('tests passed');\n",
  };
  for (const [name, text] of Object.entries(files)) await writeFile(path.join(f.project, name), text);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'the project');
  execFileSync('chown', ['-R', '1000:1000', f.project]);
  const started = Date.now();
  const init = await runCli(['init', f.project, '--home', f.home, ...mirrors.flags]);
  assert.equal(init.code, 0, init.stderr);
  assert.ok(Date.now() - started < 120_000, `init took ${Date.now() - started} ms`);
  assert.match(init.stdout, /verified by npm test/);
  assert.doesNotMatch(init.stderr, /could not be tried|timed out/, init.stderr);
  assert.equal(git(f.project, 'branch', '--list', 'run/*'), '', 'the trial leaves no branch');
  assert.equal(git(f.project, 'status', '--porcelain'), '?? runner.yaml', 'nor a file');
  // a worktree the runner's pool keeps warm, in its home: what the check planted is not in it
  const others = git(f.project, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ')).map((l) => l.slice('worktree '.length)).filter((w) => w !== f.project);
  for (const w of others) {
    assert.ok(w.startsWith(path.join(f.home, 'pool') + path.sep), `a worktree outside the runner's pool: ${w}`);
    assert.equal(existsSync(path.join(w, 'planted.txt')), false, `the pooled ${w} holds what the check planted`);
  }
});

test('init --no-try proposes every check untried, saying so; outside a git repository nothing is tried', async () => {
  const f = await lintBrokenProject();
  const r = await runCli(['init', f.project, '--no-try', '--home', f.home]);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /trying/);
  const starter = await readFile(path.join(f.project, 'runner.yaml'), 'utf8');
  assert.match(starter, /# The checks were not tried on the project \(--no-try\)\.\n {2}- id: verify/);
  assert.match(starter, /npm test\n {6}npm run lint\n/);
  assert.equal(git(f.project, 'branch', '--list', 'run/*'), '');
  const plain = path.join(f.root, 'plain');
  execFileSync('cp', ['-r', f.project, plain]);
  execFileSync('rm', ['-rf', path.join(plain, '.git'), path.join(plain, 'runner.yaml')]);
  // a dev container, found where the spec looks (the schema does not take image: devcontainer in this build: said, not proposed)
  execFileSync('mkdir', [path.join(plain, '.devcontainer')]);
  await writeFile(path.join(plain, '.devcontainer', 'devcontainer.json'), '{ "image": "runner/base:latest" }\n');
  const p = await runCli(['init', plain, '--home', f.home]);
  assert.equal(p.code, 0, p.stderr);
  const plainStarter = await readFile(path.join(plain, 'runner.yaml'), 'utf8');
  assert.match(plainStarter, /not tried on the project \(not a git repository: a trial would work in the folder itself\)/);
  assert.match(plainStarter, schemaTakesDevcontainer() ? /\n {2}image: devcontainer / : /# Found \.devcontainer\/devcontainer\.json: this runner does not run steps in a dev container yet/);
});

test('a project with a dev container: init proposes image: devcontainer and tries the checks in it (a tool only it has passes; a linter it lacks is left out)', { timeout: 300_000 }, async () => {
  assert.equal(schemaTakesDevcontainer(), true, 'this runner takes image: devcontainer');
  const f = await fixture();
  await mkdir(path.join(f.project, '.devcontainer'));
  // a nonce: the image is this test's own, removed after it
  const nonce = `${process.pid}-${Date.now()}`;
  await writeFile(path.join(f.project, '.devcontainer', 'Dockerfile'), `FROM runner/toolchain:latest\nUSER root\nRUN printf '#!/bin/sh\\necho dc-tool says hello ${nonce}\\n' > /usr/local/bin/dc-tool && chmod 755 /usr/local/bin/dc-tool\n`);
  await writeFile(path.join(f.project, '.devcontainer', 'devcontainer.json'), '{ "build": { "dockerfile": "Dockerfile" } }\n');
  await writeFile(path.join(f.project, 'Makefile'), 'test:\n\tdc-tool\nlint:\n\tnot-a-linter .\n');
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'a dev container');
  const r = await runCli(['init', f.project, '--home', f.home]);
  const image = /image (runner-devcontainer:\S+) is ready/.exec(r.stderr)?.[1];
  after(() => {
    for (const tag of image ? [image, `${image}-build`, `${image}-features`] : []) {
      try {
        execFileSync('docker', ['image', 'rm', '-f', tag], { stdio: 'ignore' });
      } catch {
        // not made
      }
    }
  });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /in the runner's sandbox \(in its dev container, \.devcontainer\/devcontainer\.json\)/);
  assert.match(r.stderr, new RegExp(`\\[try\\] dc-tool says hello ${nonce}`), 'the test ran in the dev container: its tool is there');
  const starter = await readFile(path.join(f.project, 'runner.yaml'), 'utf8');
  assert.match(starter, /\ndefaults:\n {2}image: devcontainer /);
  const verify = parsePipeline(starter, 'runner.yaml').steps.find((s) => s.verify)!;
  assert.equal(verify.image, undefined, 'the verify step takes the defaults\' dev container');
  assert.match(verify.run!, /^make test\n# make lint failed on the base commit \w+ \(exit 2\): make: not-a-linter: No such file or directory; left out .*\n# make lint\n$/);
});
