/** Delivery: runner apply and runner merge, and every refusal leaving the checkout byte-identical. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { writeFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, pipelineYaml, projectsForThisFile, runCli, treeHash, writePipeline, type Fixture, otherWorktrees } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** The checkout as a person sees it: files, index, HEAD and branch tips. */
async function checkoutState(dir: string): Promise<string> {
  const h = createHash('sha256').update(await treeHash(dir));
  h.update(await readFile(path.join(dir, '.git', 'index')));
  h.update(git(dir, 'rev-parse', 'HEAD')).update(git(dir, 'for-each-ref', '--format=%(refname) %(objectname)', 'refs/heads/main', 'refs/heads/other'));
  return h.digest('hex');
}

async function run(f: Fixture, steps: string, extra = ''): Promise<any> {
  const body = pipelineYaml(steps, '  push: never') + extra;
  const r = await execPipeline(f, await writePipeline(f, body, `p-${Math.random().toString(36).slice(2)}.yaml`));
  return r.json;
}

function commitOnMain(f: Fixture, file: string, content: string): void {
  git(f.project, 'checkout', '-q', 'main');
  execWrite(path.join(f.project, file), content);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=u', '-c', 'user.email=u@x', 'commit', '-qm', `user edits ${file}`);
}

function execWrite(file: string, content: string): void {
  writeFileSync(file, content);
}

async function refused(f: Fixture, args: string[], reason: string): Promise<string> {
  const before = await checkoutState(f.project);
  const r = await runCli([...args, '--home', f.home]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`refused \\(${reason}\\)`));
  assert.equal(await checkoutState(f.project), before, `the checkout is byte-identical after ${reason}`);
  return r.stderr;
}

test('apply brings the change in as uncommitted changes', async () => {
  const f = await fixture();
  const r = await run(f, '  - id: edit\n    run: echo three >> data.txt && echo new > new.txt\n');
  const a = await runCli(['apply', r.runId, '--home', f.home]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(await readFile(path.join(f.project, 'data.txt'), 'utf8'), 'one\ntwo\nthree\n');
  assert.deepEqual(git(f.project, 'status', '--porcelain').split('\n').map((l) => l.trim()).sort(), ['?? new.txt', 'M data.txt']);
  assert.equal(git(f.project, 'rev-parse', 'HEAD'), r.baseSha, 'nothing is committed');
  const shown = (await runCli(['runs', 'show', r.runId, '--home', f.home])).stdout;
  assert.match(shown, /delivered\s+apply/);
  assert.match(shown, /^started by cli \(.+\)$/m, 'runner exec is recorded as started from the CLI, by its OS user');
  // A second apply is refused (the checkout now has the change, uncommitted): both attempts are in the record, as the CLI's.
  assert.equal((await runCli(['apply', r.runId, '--home', f.home])).code, 1);
  const rec = JSON.parse((await runCli(['runs', 'show', r.runId, '--json', '--home', f.home])).stdout);
  assert.deepEqual(
    rec.deliveries.map((d: any) => [d.action, d.ok, d.refused ?? null, d.by.via, typeof d.by.user, typeof d.at]),
    [
      ['apply', true, null, 'cli', 'string', 'string'],
      ['apply', false, 'target_dirty', 'cli', 'string', 'string'],
    ],
  );
  assert.equal(rec.startedBy.via, 'cli');
});

test('every refusal: target_dirty, verification_failed, patch_invalid, scope_violation, conflict', async () => {
  const f = await fixture();
  const edit = await run(f, '  - id: edit\n    run: echo three >> data.txt\n');

  await writeFile(path.join(f.project, 'README.md'), 'local edit\n');
  const dirty = await refused(f, ['apply', edit.runId], 'target_dirty');
  assert.match(dirty, /uncommitted changes: README\.md; commit or stash them/);
  await refused(f, ['merge', edit.runId], 'target_dirty');
  git(f.project, 'checkout', '-q', '--', 'README.md');

  const unverified = await run(
    f,
    '  - id: edit\n    run: echo x > x.txt\n  - id: tests\n    verify: true\n    continue_on_error: true\n    run: exit 1\n',
  );
  assert.match(await refused(f, ['apply', unverified.runId], 'verification_failed'), /step tests \(verify: true\) did not pass/);
  await refused(f, ['merge', unverified.runId], 'verification_failed');

  const outside = await run(f, '  - id: edit\n    run: mkdir -p docs src && echo d > docs/a.md && echo s > src/x.js\n', 'delivery:\n  paths: ["docs/**"]\n');
  assert.match(await refused(f, ['apply', outside.runId], 'scope_violation'), /outside delivery\.paths \(docs\/\*\*\): src\/x\.js/);
  await refused(f, ['merge', outside.runId], 'scope_violation');

  commitOnMain(f, 'data.txt', 'one\nTWO\n');
  assert.match(await refused(f, ['apply', edit.runId], 'patch_invalid'), /does not apply .*run the pipeline again on the current HEAD, or merge the run \(runner merge \S+\) and settle any conflict by hand with git merge run\//);
  const conflict = await refused(f, ['merge', edit.runId], 'conflict');
  assert.match(conflict, /conflicts in data\.txt; main is unchanged/);
  assert.deepEqual(await readdir(path.join(f.home, 'merges')), [], 'no temporary worktree is left');
  assert.deepEqual(otherWorktrees(f), []);
});

test('merge: a merge commit into the checked-out branch moves the checkout; --squash makes one commit', async () => {
  const f = await fixture();
  const a = await run(f, '  - id: a\n    run: echo a > a.txt\n');
  const b = await run(f, '  - id: b\n    run: echo b > b.txt\n');
  // the project's own identity, as a plain git merge there would use; step commits keep the runner's
  git(f.project, 'config', 'user.name', 'Project Owner');
  git(f.project, 'config', 'user.email', 'owner@example.org');
  const m = await runCli(['merge', a.runId, '--home', f.home]);
  assert.equal(m.code, 0, m.stderr);
  assert.match(m.stdout, /merged run\/\S+ into main .*the checkout moved with it; committed as Project Owner <owner@example\.org>$/m);
  assert.equal(git(f.project, 'log', '-1', '--format=%an <%ae> / %cn <%ce>', 'main'), 'Project Owner <owner@example.org> / Project Owner <owner@example.org>');
  assert.equal(git(f.project, 'log', '-1', '--format=%an', 'main^2'), 'runner', 'the step commit is the runner\'s');
  assert.equal(git(f.project, 'rev-list', '--parents', '-1', 'main').split(' ').length, 3, 'a merge commit has two parents');
  assert.equal(await readFile(path.join(f.project, 'a.txt'), 'utf8'), 'a\n');
  assert.equal(git(f.project, 'status', '--porcelain'), '', 'working tree and index match the branch');

  const s = await runCli(['merge', b.runId, '--squash', '--home', f.home]);
  assert.equal(s.code, 0, s.stderr);
  assert.equal(git(f.project, 'rev-list', '--parents', '-1', 'main').split(' ').length, 2, 'a squash is one commit with one parent');
  assert.equal(git(f.project, 'log', '-1', '--format=%an', 'main'), 'Project Owner');
  assert.match(git(f.project, 'log', '-1', '--format=%s%n%b', 'main'), /^Squash-merge run\/\S+ \(run \S+, pipeline it\)\n+Runner-Run: /);
  assert.equal(await readFile(path.join(f.project, 'b.txt'), 'utf8'), 'b\n');
  assert.deepEqual(await readdir(path.join(f.home, 'merges')), []);
});

test('merge --into a branch not checked out leaves the checkout alone; merge --all reports each run', async () => {
  const f = await fixture();
  git(f.project, 'branch', 'other');
  const runs = [
    await run(f, '  - id: a\n    run: echo a > a.txt\n'),
    await run(f, '  - id: b\n    run: echo b > b.txt\n'),
    await run(f, '  - id: c\n    run: echo "conflicting" > a.txt\n'),
  ];
  const before = await checkoutState(f.project);
  const all = await runCli(['merge', '--all', ...runs.map((r) => r.runId), '--into', 'other', '--home', f.home]);
  assert.equal(all.code, 1, all.stderr);
  const rows = all.stdout.trim().split('\n').slice(1);
  assert.match(rows[0]!, new RegExp(`^${runs[0].runId}\\s+merged\\s`));
  assert.match(rows[1]!, new RegExp(`^${runs[1].runId}\\s+merged\\s`));
  assert.match(rows[2]!, new RegExp(`^${runs[2].runId}\\s+conflict\\s+.*a\\.txt`));
  assert.equal(git(f.project, 'show', 'other:a.txt'), 'a');
  assert.equal(git(f.project, 'show', 'other:b.txt'), 'b');
  assert.equal(git(f.project, 'rev-parse', 'main'), runs[0].baseSha, 'main and the checkout did not move');
  assert.notEqual(await checkoutState(f.project), before, 'other moved');
  assert.equal(git(f.project, 'status', '--porcelain'), '');
});

test('delivery takes the commit a run ended on, never what its branch holds by now', async () => {
  const f = await fixture();
  const body = (verifyExit: number) =>
    pipelineYaml(`  - id: work\n    run: echo "run $RUNNER_TASK_RUN" > "work-$RUNNER_TASK_RUN.txt"\n  - id: tests\n    verify: true\n    run: exit ${verifyExit}\n`, '  push: never');
  const good = await execPipeline(f, await writePipeline(f, body(0), 'good.yaml'), ['--task', 'tk']);
  const bad = await execPipeline(f, await writePipeline(f, body(1), 'bad.yaml'), ['--task', 'tk']);
  assert.equal(good.code, 0, good.stderr);
  assert.equal(bad.code, 1);
  await refused(f, ['merge', bad.json.runId], 'verification_failed');
  const m = await runCli(['merge', good.json.runId, '--home', f.home]);
  assert.equal(m.code, 0, m.stderr);
  assert.equal(git(f.project, 'show', 'main:work-1.txt'), 'run 1');
  assert.throws(() => git(f.project, 'show', 'main:work-2.txt'), 'the failed run\'s later commit is not delivered');
});

test('merge --into a branch checked out in another worktree is refused; an untracked file in the way refuses apply', async () => {
  const f = await fixture();
  const r = await run(f, '  - id: a\n    run: echo a > a.txt && echo n > new.txt\n');
  git(f.project, 'worktree', 'add', '-q', '-b', 'dev', path.join(f.root, 'dev-checkout'));
  await refused(f, ['merge', r.runId, '--into', 'dev'], 'target_checked_out');
  git(f.project, 'worktree', 'remove', '--force', path.join(f.root, 'dev-checkout'));
  await writeFile(path.join(f.project, 'new.txt'), 'mine, untracked\n');
  await refused(f, ['apply', r.runId], 'patch_invalid');
  await refused(f, ['merge', r.runId], 'target_dirty');
  assert.equal(await readFile(path.join(f.project, 'new.txt'), 'utf8'), 'mine, untracked\n');
});

test('a second run holding the change another run\'s merge brought is refused, saying so, unless --allow-empty (then recorded as a merge)', async () => {
  const f = await fixture();
  const a = await run(f, '  - id: a\n    run: echo same > same.txt\n');
  const b = await run(f, '  - id: b\n    run: echo same > same.txt\n');
  const m = await runCli(['merge', a.runId, '--home', f.home]);
  assert.equal(m.code, 0, m.stderr);
  const said = await refused(f, ['merge', b.runId], 'not_deliverable');
  assert.match(said, /brings no change to main: its change is there already \(merged from another run, or made by hand\), so main is unchanged; to record the merge all the same, merge with --allow-empty/);
  const forced = await runCli(['merge', b.runId, '--allow-empty', '--home', f.home]);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(git(f.project, 'rev-list', '--parents', '-1', 'main').split(' ').length, 3, 'recorded as a merge, as asked');
  assert.equal(git(f.project, 'diff', '--stat', 'main^1', 'main'), '', 'that changes nothing');
});
