/**
 * A step's work that git takes as bytes, and work git cannot take: nothing
 * goes unrecorded without a word. A name that is not UTF-8 (in a directory of
 * mode 000) is committed as its bytes; a directory the project's owner cannot
 * read, or a name git refuses (`.GIT/config`), is named, the rest committed,
 * the step `not_recorded` (continue_on_error or not), the workspace kept, and
 * the run refused for delivery.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, execPipeline, git, ISOLATION, pipelineYaml, projectsForThisFile, runCli, serveFolder, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** The branch's tree as git stores it: path bytes (hex) → blob id. */
function treeOf(f: Fixture, ref: string): Map<string, string> {
  const out = execFileSync('git', ['-c', 'safe.directory=*', '-C', f.project, 'ls-tree', '-r', '-z', ref]);
  const tree = new Map<string, string>();
  for (let at = 0; at < out.length; ) {
    const end = out.indexOf(0, at);
    const entry = out.subarray(at, end);
    const tab = entry.indexOf(0x09);
    tree.set(entry.subarray(tab + 1).toString('hex'), entry.subarray(0, tab).toString('latin1').split(' ')[2]!);
    at = end + 1;
  }
  return tree;
}

const hex = (latin1: string) => Buffer.from(latin1, 'latin1').toString('hex');

async function record(f: Fixture, runId: string): Promise<any> {
  return JSON.parse(await readFile(path.join(f.home, 'runs', runId, 'run.json'), 'utf8'));
}

test('a name that is not UTF-8, in a directory of mode 000, is committed as its bytes (git as the project\'s owner)', async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: bytes
    run: |
      D=$(printf 'd\\377'); F=$(printf 'f\\376.txt')
      mkdir "$D" && echo evil > "$D/evil" && chmod 000 "$D/evil" "$D"
      echo named > "$F" && chmod 000 "$F"
      echo ok > ok.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.bytes.status, 'completed');
  const tree = treeOf(f, r.json.branch);
  const blob = (name: string) => git(f.project, 'cat-file', 'blob', tree.get(hex(name)) ?? 'missing');
  assert.equal(blob('d\xff/evil'), 'evil', 'the file under the non-UTF-8 directory is on the branch, its name byte for byte');
  assert.equal(blob('f\xfe.txt'), 'named');
  assert.equal(blob('ok.txt'), 'ok');
  assert.doesNotMatch(r.stderr, /not recorded|not committed/);
});

test('a directory the project\'s owner cannot read and the runner cannot change is named; the rest is committed', async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: lock
    user: "0:0"
    cap_add: [LINUX_IMMUTABLE]
    run: |
      L=$(printf 'locked\\377')
      mkdir "$L" && echo inside > "$L/inside.txt" && chmod 700 "$L"
      chattr +i "$L" || echo "chattr refused"
      echo ok > ok.txt
`),
  );
  let worktree: string | undefined;
  try {
    const r = await execPipeline(f, file);
    const kept: string = r.json?.worktree ?? path.join(f.home, 'worktrees', r.json?.runId ?? 'none');
    worktree = kept;
    if (ISOLATION === 'gvisor') {
      // gVisor's kernel has no inode flags (chattr: "Operation not supported"):
      // a step in it cannot make a directory the runner cannot change. The
      // runner hands the root-only directory back, and all of it is committed.
      assert.match(r.stderr, /\[lock\] chattr refused/);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.json.steps.lock.status, 'completed');
      assert.equal(git(f.project, 'show', `${r.json.branch}:ok.txt`), 'ok');
      assert.equal(git(f.project, 'cat-file', 'blob', treeOf(f, r.json.branch).get(hex('locked\xff/inside.txt')) ?? 'missing'), 'inside');
      assert.doesNotMatch(r.stderr, /not recorded|not committed/);
      return;
    }
    assert.doesNotMatch(r.stderr, /chattr refused/, 'under runc a step with LINUX_IMMUTABLE can lock the directory');
    assert.equal(r.code, 1, r.stderr);
    const step = r.json.steps.lock;
    assert.equal(step.status, 'not_recorded');
    assert.equal(step.exitCode, 0);
    assert.match(step.message, /its work is not all recorded: locked\\xff \(git, as the project's owner, cannot read it, and the runner could not change that\) is on no commit/);
    assert.equal(git(f.project, 'show', `${r.json.branch}:ok.txt`), 'ok', 'what could be read is committed');
    assert.ok(!treeOf(f, r.json.branch).has(hex('locked\xff/inside.txt')));
    assert.equal(r.json.worktree, kept, 'the workspace is kept');
    assert.ok(existsSync(Buffer.from(`${kept}/locked\xff/inside.txt`, 'latin1')), 'the unread work is still there');
    assert.deepEqual((await record(f, r.json.runId)).steps[0].notRecorded, { paths: ['locked\\xff'], count: 1 }, 'its name with the byte that is not UTF-8 made visible');
    assert.match(r.stderr, /✗ step lock work not recorded \(exit 0\)/);
  } finally {
    // chattr -i on the directory: argv cannot carry its name's byte, a glob in a shell can
    if (worktree && existsSync(worktree)) execFileSync('sh', ['-c', 'chattr -i "$1"/locked*', 'sh', worktree]);
  }
});

for (const continueOnError of [false, true]) {
  test(`.GIT/config, .Git and sub/.gIt${continueOnError ? ' with continue_on_error and exit 3' : ''}: the rest is committed, the step is not_recorded, the run fails and is not delivered`, async () => {
    const f = await fixture();
    const file = await writePipeline(
      f,
      pipelineYaml(`  - id: plant
${continueOnError ? '    continue_on_error: true\n' : ''}    run: |
      mkdir -p .GIT .Git sub/.gIt
      printf '[core]\\n\\thooksPath = /tmp\\n' | tee .GIT/config .Git/config sub/.gIt/config > /dev/null
      echo work > work.txt && echo more > sub/more.txt
      exit ${continueOnError ? 3 : 0}
  - id: after
    run: echo after > after.txt
`),
    );
    const r = await execPipeline(f, file);
    assert.equal(r.code, 1, r.stderr);
    assert.equal(r.json.status, 'failed');
    assert.equal(r.json.error.code, 'work_not_recorded');
    const step = r.json.steps.plant;
    assert.equal(step.status, 'not_recorded', 'never plainly completed (nor tolerated as failed)');
    assert.equal(step.exitCode, continueOnError ? 3 : 0);
    assert.equal(r.json.steps.after.status, 'skipped', 'the run stops there');
    assert.match(step.message, /\.GIT\/config, \.Git\/config, sub\/\.gIt\/config \(names git refuses to store\) are on no commit and stay in the worktree/);
    assert.match(r.stderr, new RegExp(`✗ step plant work not recorded \\(exit ${continueOnError ? 3 : 0}\\) in \\S+ \\(commit [0-9a-f]{10}\\): its work is not all recorded`));

    // the branch: the rest of the work, no case variant of .git, and a trailer counting what is missing
    const [c] = commitsOn(f.project, r.json.branch, r.json.baseSha);
    assert.equal(commitsOn(f.project, r.json.branch, r.json.baseSha).length, 1);
    assert.match(c!.body, /Runner-Not-Committed: 3 paths \(see the run's record\)/);
    assert.equal(git(f.project, 'show', `${r.json.branch}:work.txt`), 'work');
    assert.equal(git(f.project, 'show', `${r.json.branch}:sub/more.txt`), 'more');
    assert.doesNotMatch(git(f.project, 'ls-tree', '-r', '--name-only', r.json.branch), /\.git\//i);

    // the record, runs show and the kept workspace say the same
    const rec = await record(f, r.json.runId);
    assert.deepEqual(rec.steps[0].notRecorded, { paths: ['.GIT/config', '.Git/config', 'sub/.gIt/config'], count: 3 });
    assert.equal(rec.keptWorkspace, true);
    assert.equal(await readFile(path.join(r.json.worktree, '.GIT', 'config'), 'utf8'), '[core]\n\thooksPath = /tmp\n');
    const show = await runCli(['runs', 'show', r.json.runId, '--home', f.home]);
    assert.match(show.stdout, /plant\s+not_recorded\s+/);
    assert.match(show.stdout, /status\s+failed: its work is not all recorded: \.GIT\/config/);
    if (!continueOnError) {
      const s = await serveFolder(f, {}, '127.0.0.1:0', { args: ['--project', f.root] }); // serves the runs of projects under --project (docs/operations.md)
      try {
        const api = (await (await fetch(`${s.base}/api/runs/${r.json.runId}`)).json()) as any;
        assert.equal(api.steps[0].status, 'not_recorded');
        assert.deepEqual(api.steps[0].notRecorded, rec.steps[0].notRecorded);
        assert.equal(api.error.code, 'work_not_recorded');
      } finally {
        s.child.kill('SIGTERM');
        await s.exited;
      }
    }

    // delivery: refused, the branch is not the whole of the run
    for (const cmd of ['merge', 'apply']) {
      const d = await runCli([cmd, r.json.runId, '--home', f.home]);
      assert.equal(d.code, 1, d.stderr);
      assert.match(d.stderr, /refused \(work_not_recorded\): run \S+'s branch does not hold all its work: not on it is work of step plant \(left in the workspace \S+\)/);
    }
    assert.equal(git(f.project, 'rev-parse', 'main'), r.json.baseSha, 'nothing was delivered');
    await runCli(['gc', '--yes', '--home', f.home, r.json.runId]);
  });
}
