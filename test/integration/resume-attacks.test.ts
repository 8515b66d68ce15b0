/**
 * Resume and fork against a hostile step (docs: safety.md, every step is
 * hostile) and against a run branch changed behind the runner's back: a step
 * that tries to rewrite or delete its run's branch before the resume, one that
 * leaves a trap in its io directory and is killed with its runner, a branch
 * deleted, shadowed by a tag, or reset before a resume.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, containersOfRun, execPipeline, git, IMAGE, projectsForThisFile, runCli, startRun, until, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const rec = async (f: Fixture, id: string) => JSON.parse(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'));
const names = (r: { steps: Array<{ id: string; name?: string; status: string }> }) => r.steps.map((s) => `${s.name ?? s.id}:${s.status}`);

const pipeline = (b: string, extra = '') => `version: 1
name: hostile
project: { path: project, push: never }
defaults: { image: ${IMAGE}, timeout: 2m }
steps:
  - id: a
    run: echo a > a.txt
  - id: b
${extra}    run: |
${b.split('\n').map((l) => `      ${l}`).join('\n')}
`;

test('a step that tries to rewrite and delete its run branch before the resume: it cannot; the resume goes on with the work kept', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, pipeline(`if [ -f .tried ]; then echo passed; exit 0; fi
touch .tried
br=$(git symbolic-ref --short HEAD); echo "on $br"
git update-ref "refs/heads/$br" "$(git rev-list --max-parents=0 HEAD)" && echo REWROTE
git branch -D "$br" 2>&1; git update-ref -d "refs/heads/$br" && echo DELETED
rm -rf "$(git rev-parse --git-common-dir)/refs/heads" 2>&1 && echo REMOVED
printf 'ref: refs/heads/main\\n' > "$(git rev-parse --git-dir)/HEAD" && echo MOVED_HEAD
exit 1`));
  const first = await execPipeline(f, file);
  assert.equal(first.json.status, 'failed', first.stderr);
  const id = first.json.runId;
  const log = await readFile(path.join(f.home, 'runs', id, 'steps', 'b.log'), 'utf8');
  assert.match(log, new RegExp(`on run/${id}`));
  assert.doesNotMatch(log, /REWROTE|DELETED|REMOVED|MOVED_HEAD/, log);
  const left = (await rec(f, id)).headSha;
  assert.equal(git(f.project, 'rev-parse', `run/${id}`), left);

  const r = await runCli(['resume', id, '--home', f.home, '--json']);
  assert.equal(r.json.status, 'succeeded', r.stderr);
  assert.deepEqual(names(await rec(f, id)), ['a:completed', 'b:failed', 'b~2:completed']);
  assert.equal(git(f.project, 'merge-base', '--is-ancestor', left, `run/${id}`), '');
  assert.equal(git(f.project, 'show', `run/${id}:a.txt`), 'a');
});

test('a branch deleted, shadowed by a tag, or reset behind the runner\'s back: the resume is refused before anything, the record untouched', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipeline('if [ -f .tried ]; then echo passed; else touch .tried; exit 1; fi'));
  const failed = async () => {
    const r = await execPipeline(f, file);
    assert.equal(r.json.status, 'failed', r.stderr);
    return r.json.runId as string;
  };
  const refused = async (id: string, says: RegExp) => {
    const before = await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8');
    const r = await runCli(['resume', id, '--home', f.home]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, says);
    assert.equal(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'), before, 'the record is as it was');
    assert.deepEqual(containersOfRun(id), []);
    assert.ok(!(await readdir(path.join(f.home, 'worktrees')).catch(() => [] as string[])).includes(id), 'no worktree made');
  };

  // deleted; then a tag of its name on another commit (git worktree add would take it, detached)
  const gone = await failed();
  git(f.project, 'branch', '-D', `run/${gone}`);
  await refused(gone, new RegExp(`run ${gone} cannot be resumed: its branch run/${gone} is gone; fork it from a step instead \\(runner fork ${gone} --from STEP\\)`));
  git(f.project, 'tag', `run/${gone}`, 'main');
  await refused(gone, /its branch run\/\S+ is gone/);
  // the fork still works from the commits its record keeps
  const fk = await runCli(['fork', gone, '--from', 'b', '--home', f.home, '--json']);
  assert.equal(fk.json.status, 'failed', fk.stderr);
  assert.equal(git(f.project, 'show', `run/${fk.json.runId}:a.txt`), 'a');

  // reset to its base, or rewritten to a commit that lacks its steps' work
  const reset = await failed();
  const base = (await rec(f, reset)).baseSha;
  git(f.project, 'branch', '-f', `run/${reset}`, base);
  await refused(reset, new RegExp(`its branch run/${reset} was moved since it stopped \\(it is at ${base.slice(0, 10)}, which does not hold [0-9a-f]{10} of its completed work\\)`));
  const rewritten = await failed();
  execFileSync('git', ['-C', f.project, '-c', 'user.name=x', '-c', 'user.email=x@x', 'checkout', '-q', '-B', 'evil', base]);
  execFileSync('git', ['-C', f.project, '-c', 'user.name=x', '-c', 'user.email=x@x', 'commit', '-q', '--allow-empty', '-m', 'evil']);
  git(f.project, 'checkout', '-q', 'main');
  git(f.project, 'branch', '-f', `run/${rewritten}`, 'evil');
  await refused(rewritten, /was moved since it stopped/);
  // put back, it goes on
  git(f.project, 'branch', '-f', `run/${reset}`, (await rec(f, reset)).headSha);
  const ok = await runCli(['resume', reset, '--home', f.home, '--json']);
  assert.equal(ok.json.status, 'succeeded', ok.stderr);
});

test('a step killed with its runner (kill -9) leaves a trap in its io directory: the resume runs it again in a directory of its own', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, pipeline(`io=$(dirname "$RUNNER_OUTPUT")
if [ -f .tried ]; then echo "result=clean" >> "$RUNNER_OUTPUT"; ls -A "$io"; echo passed; exit 0; fi
touch .tried
ln -sf /etc/shadow "$RUNNER_OUTPUT"; mkdir -p "$io/b~2"; ln -s /etc "$io/b~2/output"; echo planted
sleep 300`, '    outputs: [result]\n'));
  const { child, runId } = await startRun(file, f.home, 'planted');
  child.kill('SIGKILL');
  await until('the runner gone', async () => (child.exitCode !== null || child.signalCode !== null ? true : undefined));
  // the next runner command recovers it: interrupted, its container gone
  await runCli(['runs', 'ls', '--home', f.home]);
  const stopped = await until('run interrupted', async () => {
    const r = await rec(f, runId);
    return r.status === 'interrupted' ? r : undefined;
  }, 60_000);
  assert.deepEqual(names(stopped), ['a:completed', 'b:interrupted']);

  const r = await runCli(['resume', runId, '--home', f.home, '--json']);
  assert.equal(r.json.status, 'succeeded', r.stderr);
  const done = await rec(f, runId);
  assert.deepEqual(names(done), ['a:completed', 'b:interrupted', 'b~2:completed']);
  assert.deepEqual(done.steps[2].outputs, { result: 'clean' });
  const log = await readFile(path.join(f.home, 'runs', runId, 'steps', 'b~2.log'), 'utf8');
  assert.match(log, /^passed$/m);
  assert.doesNotMatch(log, /b~2/, 'its io directory is fresh: nothing the killed attempt planted');
  assert.deepEqual(containersOfRun(runId), []);
  assert.equal(git(f.project, 'show', `run/${runId}:a.txt`), 'a');
  assert.equal(commitsOn(f.project, `run/${runId}`, done.baseSha).filter((c) => /step\/a\b/.test(c.subject)).length, 1, 'a committed once');
});
