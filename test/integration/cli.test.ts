/** The CLI's contract: help, version, validation, and exit codes for bad input and broken infrastructure. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, git, projectsForThisFile, pipelineYaml, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('--help, --version, unknown commands and flags', async () => {
  const help = await runCli(['--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /runner exec FILE \[--json\] \[--home DIR\] \[--keep-workspace\]/);
  assert.doesNotMatch(help.stdout, /[\x00-\x09\x0b-\x1f\x7f\x9b]/, 'no control character but the line end');
  assert.ok(help.stdout.includes('(\\x1b, \\r)'), 'the help names the escapes it means, as text');
  const version = await runCli(['--version']);
  assert.equal(version.code, 0);
  assert.match(version.stdout, /^runner \d+\.\d+\.\d+\n$/);
  const unknown = await runCli(['frobnicate']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command "frobnicate"/);
  const badFlag = await runCli(['exec', 'x.yaml', '--nope']);
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /Unknown option '--nope'/);
  const noFile = await runCli(['exec']);
  assert.equal(noFile.code, 2);
  assert.match(noFile.stderr, /expected FILE/);
});

test('validate reports every problem with file:line:col and exits 2; a good file exits 0', async () => {
  const f = await fixture();
  const bad = await writePipeline(
    f,
    `version: 1
name: bad
steps:
  - id: a
    image: img
    run: echo \${{ steps.zz.outputs.k }}
    timeout: forever
  - id: a
    imagee: img
`,
    'bad.yaml',
  );
  const r = await runCli(['validate', bad]);
  assert.equal(r.code, 2);
  const lines = r.stderr.trim().split('\n');
  // Every problem at once: the typos and the bad values, and the references and duplicates the rules find beside them.
  assert.match(lines[0]!, /bad\.yaml: 6 problems/);
  assert.match(r.stderr, /bad\.yaml:8:5 steps\[1\]: step "a" has no image/, 'the typo imagee: leaves the step without an image, said at once');
  assert.match(r.stderr, /bad\.yaml:6:10 steps\[0\]\.run: \$\{\{ steps\.zz\.outputs\.k \}\} names step "zz", which does not exist/);
  assert.match(r.stderr, /bad\.yaml:7:14 steps\[0\]\.timeout: expected a duration/);
  assert.match(r.stderr, /bad\.yaml:8:9 steps\[1\]\.id: duplicate step id "a"/);
  assert.match(r.stderr, /bad\.yaml:9:5 steps\[1\]\.imagee: unknown key "imagee" \(did you mean "image"\?\)/);

  const good = await writePipeline(f, pipelineYaml('  - id: ok\n    run: "true"\n'), 'good.yaml');
  const ok = await runCli(['validate', good]);
  assert.equal(ok.code, 0, ok.stderr);
  assert.match(ok.stdout, /good\.yaml: ok \(pipeline it, 1 step\)/);

  const missing = await runCli(['validate', path.join(f.root, 'nope.yaml')]);
  assert.equal(missing.code, 2);
  assert.match(missing.stderr, /cannot read the pipeline file: no such file/);
});

test('exec on an invalid file exits 2 and creates nothing', async () => {
  const f = await fixture();
  const file = await writePipeline(f, 'version: 2\nname: x\nsteps: []\n');
  const r = await runCli(['exec', file, '--home', f.home]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /version: expected version: 1/);
  assert.equal(existsSync(f.home), false);
});

test('named secrets that are not set are an error before anything starts (exit 2), all named, both ways to give them said', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml('  - id: a\n    run: "true"\n    secrets: [RUNNER_TEST_UNSET_SECRET, RUNNER_TEST_OTHER]\n').replace('steps:', 'secrets: [RUNNER_TEST_UNSET_SECRET, RUNNER_TEST_OTHER]\nsteps:'),
  );
  const r = await runCli(['exec', file, '--home', f.home], { env: { RUNNER_TEST_UNSET_SECRET: '', RUNNER_TEST_OTHER: '' } });
  assert.equal(r.code, 2, r.stderr);
  assert.match(r.stderr, /secrets RUNNER_TEST_OTHER, RUNNER_TEST_UNSET_SECRET named by the pipeline are not set: give them in the runner's environment \(export RUNNER_TEST_OTHER=\.\.\.\) or in a file of NAME=value lines passed with --secrets-file/);
  assert.equal(existsSync(f.home), false);
});

test('--input gives the run its inputs (recorded, used by the steps); a missing or unknown one exits 2 before anything starts', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml('  - id: a\n    run: echo "topic=\${{ inputs.topic }} days=\${{ inputs.days }}" > out.txt\n').replace(
      'steps:',
      'inputs:\n  topic: { description: what to write about }\n  days: { default: 7 }\nsteps:',
    ),
  );
  const missing = await runCli(['exec', file, '--home', f.home]);
  assert.equal(missing.code, 2, missing.stderr);
  assert.match(missing.stderr, /input topic is required \(what to write about\): give it a value/);
  const unknown = await runCli(['exec', file, '--home', f.home, '--input', 'topic=x', '--input', 'dayz=1']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /no input "dayz" \(did you mean "days"\?\)/);
  assert.equal(existsSync(f.home), false, 'nothing was created');

  const r = await runCli(['exec', file, '--home', f.home, '--json', '--input', 'topic=$(id) & co']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:out.txt`), 'topic=$(id) & co days=7');
  const shown = await runCli(['runs', 'show', r.json.runId, '--json', '--home', f.home]);
  assert.deepEqual(JSON.parse(shown.stdout).inputs, { topic: '$(id) & co', days: '7' });
});

test('a project that is not a git repository exits 2 and says what to do', async () => {
  const f = await fixture();
  const plain = path.join(f.root, 'plain');
  await mkdir(plain);
  await writeFile(path.join(plain, 'x'), 'x');
  const file = await writePipeline(f, pipelineYaml('  - id: a\n    run: "true"\n').replace('path: project', 'path: plain'));
  const r = await runCli(['exec', file, '--home', f.home]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /is not a git repository .*run `git init` there/);
});

test('an unreachable engine exits 3 with how to fix it', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml('  - id: a\n    run: "true"\n'));
  const r = await runCli(['exec', file, '--home', f.home], { env: { DOCKER_HOST: 'unix:///nonexistent/docker.sock' } });
  assert.equal(r.code, 3);
  assert.match(r.stderr, /docker is not reachable at unix:\/\/\/nonexistent\/docker\.sock .*start the engine/);
  assert.equal(existsSync(path.join(f.home, 'worktrees')), false, 'nothing was created');
});

test('a runner/* image that is not present exits 3, naming the image and how to build it (never pulled: test/integration/own-images.test.ts)', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml('  - id: a\n    image: runner/not-built-here:latest\n    run: "true"\n'));
  const r = await runCli(['exec', file, '--home', f.home]);
  assert.equal(r.code, 3);
  assert.match(r.stderr, /image runner\/not-built-here:latest is missing, and no recipe of this runner builds it: .*`make images` in \S+ builds runner\/base/);
});

test('validate warns about what this machine lacks; a user the engine refuses is told about the docker group', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml('  - id: a\n    run: "true"\n').replace('image: runner/base:latest', 'image: runner/not-built-here:1'));
  const mine = await runCli(['validate', file]);
  assert.equal(mine.code, 0, mine.stderr);
  assert.match(mine.stderr, /warning: image runner\/not-built-here:1 is missing, and no recipe of this runner builds it: .*never pulled/);
  const r = spawnSync(process.execPath, [CLI, 'validate', file], { uid: 65534, gid: 65534, encoding: 'utf8', env: { PATH: process.env.PATH } });
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stderr, /images not checked: docker is not reachable at \S+ \(EACCES\): this user \(uid 65534\) may not use the engine's socket: add it to the docker group/);
});
