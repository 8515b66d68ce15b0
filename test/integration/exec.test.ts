/** runner exec end to end: real git, real Docker engine. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import {
  commitsOn,
  containersOfRun,
  execPipeline,
  git,
  projectsForThisFile,
  runCli,
  pipelineYaml,
  otherWorktrees,
  writePipeline,
} from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('happy path: one commit per changing step with trailers, pushed, no worktree or container left', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: write
    run: |
      echo "hello from write"
      echo first > first.txt
      echo "summary=wrote first.txt" >> "$RUNNER_OUTPUT"
      echo "word=pears" >> "$RUNNER_OUTPUT"
    outputs: [word]
  - id: nothing
    run: echo "changes nothing"
  - id: use
    env: { WORD: "\${{ steps.write.outputs.word }}" }
    run: |
      echo "$WORD and \${{ steps.write.outputs.word }}" > second.txt
      test -r /home/agent/project-workspace/README.md
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const s = r.json;
  assert.equal(s.status, 'succeeded');
  assert.equal(s.pushed, true);
  assert.equal(s.branch, `run/${s.runId}`);
  assert.match(s.runId, /^\d{8}-\d{6}-[a-z0-9]{6}$/);
  assert.deepEqual(Object.keys(s.steps), ['write', 'nothing', 'use']);
  assert.equal(s.steps.nothing.commit, null, 'a step that changed nothing makes no commit');

  const commits = commitsOn(f.project, s.branch, s.baseSha);
  assert.deepEqual(
    commits.map((c) => c.subject),
    ['step/use (runner/base:latest): completed', 'step/write (runner/base:latest): wrote first.txt'],
  );
  assert.equal(commits[1]!.sha, s.steps.write.commit);
  assert.equal(commits[0]!.sha, s.headSha);
  assert.match(commits[1]!.body, new RegExp(`Runner-Run: ${s.runId}\nRunner-Step: write\nRunner-Status: completed`));
  assert.equal(git(f.project, 'show', `${s.branch}:second.txt`), 'pears and pears');

  assert.equal(git(f.remote, 'rev-parse', `refs/heads/${s.branch}`), s.headSha, 'the remote has the branch');
  assert.deepEqual(await readdir(path.join(f.home, 'worktrees')), [], 'no worktree left');
  assert.deepEqual(otherWorktrees(f), []);
  assert.deepEqual(containersOfRun(s.runId), []);
  assert.equal(git(f.project, 'status', '--porcelain'), '', 'the project checkout is untouched');

  const runDir = path.join(f.home, 'runs', s.runId);
  const record = JSON.parse(await readFile(path.join(runDir, 'run.json'), 'utf8'));
  assert.equal(record.status, 'succeeded');
  assert.equal(record.steps.length, 3);
  assert.match(await readFile(path.join(runDir, 'steps', 'write.log'), 'utf8'), /hello from write/);
  const events = (await readFile(path.join(runDir, 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  assert.deepEqual(
    events.map((e) => e.message),
    ['run_started', 'step_started', 'step_finished', 'step_started', 'step_finished', 'step_started', 'step_finished', 'push', 'run_decided', 'workspace_removed', 'run_finished'],
  );
  assert.match(r.stderr, /\[write\] hello from write/, 'step output is streamed with the step id (to stderr under --json)');
});

test('steps run as the project owner: no file in the worktree or the repository ends up owned by root', async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: make
    run: |
      test "$(id -u):$(id -g)" = "1000:1000"
      mkdir -p sub/dir && echo x > sub/dir/file.txt && echo y > top.txt
`),
  );
  const r = await execPipeline(f, file, ['--keep-workspace']);
  assert.equal(r.code, 0, r.stderr);
  const wt = r.json.worktree as string;
  assert.ok(wt && existsSync(wt), 'the kept worktree exists');
  for (const rel of ['sub/dir/file.txt', 'top.txt', 'sub', 'README.md', '.']) {
    assert.equal((await stat(path.join(wt, rel))).uid, 1000, rel);
  }
  const rootOwned = await findNotOwnedBy(path.join(f.project, '.git'), 1000);
  assert.deepEqual(rootOwned, [], 'every file git wrote in the project belongs to its owner');
  // The hint works when pasted, as root on a uid-1000 project.
  const hint = /workspace kept at \S+ \(once you are done with it: (runner gc --yes --home \S+ \S+)\)/.exec(r.stderr);
  assert.ok(hint, r.stderr);
  const dry = await runCli(hint[1]!.split(' ').slice(1).filter((a) => a !== '--yes'));
  assert.match(dry.stdout, new RegExp(`${r.json.runId} .* ${wt}`));
  assert.ok(existsSync(wt), 'without --yes nothing is removed');
  const gc = await runCli(hint[1]!.split(' ').slice(1));
  assert.equal(gc.code, 0, gc.stderr);
  assert.equal(existsSync(wt), false, 'runner gc removed the kept worktree');
  assert.deepEqual(otherWorktrees(f), []);
  assert.equal(git(f.project, 'rev-parse', r.json.branch), r.json.headSha, 'the branch stays');
  assert.match((await runCli(['gc', '--home', f.home])).stdout, /no kept worktrees/);
});

test('uncommitted changes in the project are named before the run, which does not see them; the pipeline file inside the project is not among them', async () => {
  const f = await fixture();
  await writeFile(path.join(f.project, 'TASK.md'), 'make it so\n');
  await writeFile(path.join(f.project, 'README.md'), 'edited, not committed\n');
  const file = await writePipeline(f, pipelineYaml('  - id: look\n    run: ls TASK.md 2>&1 | tee seen.txt; true\n'));
  await writeFile(path.join(f.project, 'runner.yaml'), (await readFile(file, 'utf8')).replace('path: project', 'path: .'));
  const r = await execPipeline(f, path.join(f.project, 'runner.yaml'));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /warning: the project has 2 uncommitted changes this run will not see \(it starts from the commit [0-9a-f]{10}\): (TASK\.md \(untracked\)|README\.md \(modified\)), (TASK\.md \(untracked\)|README\.md \(modified\))\. To include them, commit them first/);
  assert.doesNotMatch(r.stderr, /runner\.yaml \(untracked\)/);
  assert.match(git(f.project, 'show', `${r.json.branch}:seen.txt`), /No such file/, 'the run did not see it, as it said');
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'task');
  const again = await execPipeline(f, path.join(f.project, 'runner.yaml'));
  assert.equal(again.code, 0, again.stderr);
  assert.doesNotMatch(again.stderr, /uncommitted/);
});

async function findNotOwnedBy(dir: string, uid: number): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true, recursive: true })) {
    const p = path.join(e.parentPath ?? (e as any).path, e.name);
    if ((await stat(p).catch(() => undefined))?.uid !== uid && !e.isSymbolicLink()) out.push(p);
  }
  return out;
}
