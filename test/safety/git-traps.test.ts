/** Traps a step can set for host git and for the hand-over walk. Found by attacking the runner; each stays fixed. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, execPipeline, git, makeProject, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('a nested repository with a filter in its config runs nothing on the host; its files are committed', async () => {
  const f = await fixture();
  const marker = path.join(f.root, 'PWNED');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: plant
    run: |
      mkdir sub && cd sub && git init -q && echo a > a.txt
      git -c user.name=x -c user.email=x@x add a.txt && git -c user.name=x -c user.email=x@x commit -qm x
      printf '[filter "evil"]\\n\\tclean = sh -c "touch ${marker}; cat"\\n[core]\\n\\tfsmonitor = touch ${marker}\\n' >> .git/config
      echo '* filter=evil' > .gitattributes
  - id: benign
    run: echo hello > hello.txt && echo more >> sub/a.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(existsSync(marker), false, 'no command of the planted repository ran on the host');
  assert.match(git(f.project, 'ls-tree', '-r', r.json.branch), /^100644 blob \w+\tsub\/a\.txt$/m, 'committed as a plain file, not a gitlink');
  assert.equal(git(f.project, 'show', `${r.json.branch}:sub/a.txt`), 'a\nmore');
  assert.match(r.stderr, /not committed \(git must not read them\): sub\/\.git/);
});

test('a gitfile pointing at a host repository is not followed', async () => {
  const f = await fixture();
  const host = await makeProject({ remote: false });
  try {
    const before = execFileSync('git', ['-C', host.project, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim();
    const file = await writePipeline(
      f,
      pipelineYaml(`  - id: peek
    run: |
      mkdir peek && printf 'gitdir: ${host.project}/.git\\n' > peek/.git && echo x > peek/x.txt
`),
    );
    const r = await execPipeline(f, file);
    assert.equal(r.code, 0, r.stderr);
    const tree = git(f.project, 'ls-tree', '-r', r.json.branch);
    assert.doesNotMatch(tree, /^160000 /m, 'no gitlink to the host repository');
    assert.doesNotMatch(tree, new RegExp(before), 'the host repository\'s HEAD is nowhere in the tree');
    assert.match(tree, /\tpeek\/x\.txt$/m);
    assert.equal(git(host.project, 'status', '--porcelain'), '', 'the host repository is untouched');
  } finally {
    await host.cleanup();
  }
});

test('a setuid program a step leaves is not setuid after the hand-over', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: suid
    run: |
      cp /bin/sh ./rootsh && chmod 6755 ./rootsh
      mkdir shared && chmod 3777 shared
`),
  );
  const r = await execPipeline(f, file, ['--keep-workspace']);
  assert.equal(r.code, 0, r.stderr);
  const st = await stat(path.join(r.json.worktree, 'rootsh'));
  assert.equal(st.mode & 0o7000, 0, `mode ${(st.mode & 0o7777).toString(8)}`);
  assert.equal((await stat(path.join(r.json.worktree, 'shared'))).mode & 0o7000, 0);
});

test('a tampering step on a project of another uid still has its work saved as a patch', async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: swap
    run: |
      echo important > important.txt
      rm -f .git && echo "gitdir: /tmp/elsewhere" > .git
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.error.code, 'workspace_tampered');
  const patch = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'swap.patch'), 'utf8');
  assert.match(patch, /\+important/);
  assert.equal(commitsOn(f.project, r.json.branch, r.json.baseSha).length, 0);
});

test('a secret straddling the 64 KiB line cut, or the commit subject cut, leaves no prefix behind', async () => {
  const f = await fixture();
  const secret = 'Zq9topsecretvalue';
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: straddle
    secrets: [RUNNER_TEST_TOKEN]
    run: |
      head -c 65530 /dev/zero | tr '\\0' x; echo "$RUNNER_TEST_TOKEN and more"
      echo "summary=$(head -c 60 /dev/zero | tr '\\0' y)$RUNNER_TEST_TOKEN" >> "$RUNNER_OUTPUT"
      echo x > x.txt
`).replace('steps:', 'secrets: [RUNNER_TEST_TOKEN]\nsteps:'),
  );
  const r = await execPipeline(f, file, [], { env: { RUNNER_TEST_TOKEN: secret }, tailOnly: true });
  assert.equal(r.code, 0, r.stderr.slice(-500));
  const log = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'straddle.log'), 'utf8');
  for (let n = 3; n <= secret.length; n++) {
    assert.ok(!log.includes(secret.slice(0, n)), `no ${n}-character prefix in the log`);
  }
  const subject = git(f.project, 'log', '-1', '--format=%s', r.json.branch);
  assert.ok(!subject.includes(secret.slice(0, 3)), subject);
  assert.match(subject, /y{60}\*\*\*/);
});
