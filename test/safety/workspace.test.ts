/** The canonical project, the host and the runner's git survive a step that attacks the workspace. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { commitsOn, execPipeline, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** Every file under dir (relative path → sha256), symlinks by their target. */
async function snapshot(dir: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    const p = path.join(e.parentPath ?? (e as any).path, e.name);
    if (e.isFile()) out.set(path.relative(dir, p), createHash('sha256').update(await readFile(p)).digest('hex'));
  }
  return out;
}

test('writes to the read-only project fail; its tree and .git are byte-identical apart from the run branch', async () => {
  const f = await fixture();
  const before = await snapshot(f.project);
  const gitDir = path.join(f.project, '.git');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: vandal
    run: |
      P=/home/agent/project-workspace
      for target in "$P/README.md" "$P/new.txt" "$P/.git/config" "$P/.git/hooks/pre-commit" "$P/.git/HEAD" \\
                    "$P/.git/refs/heads/main" "${gitDir}/config" "${gitDir}/hooks/post-checkout"; do
        if echo pwned > "$target" 2>/dev/null; then echo "WROTE $target"; else echo "refused $target"; fi
      done
      rm -rf "$P/.git/objects" 2>/dev/null || echo "refused rm objects"
      echo mine > mine.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(r.stderr, /WROTE/);
  assert.equal((r.stderr.match(/refused /g) ?? []).length, 9);
  const after = await snapshot(f.project);
  for (const [rel, hash] of before) assert.equal(after.get(rel), hash, `${rel} is unchanged`);
  const added = [...after.keys()].filter((k) => !before.has(k));
  // and git's record of the run's worktree, which went back to the pool (its gitdir says where)
  const admin = `.git/worktrees/${r.json.runId}/`;
  for (const rel of added) {
    if (rel.startsWith(admin)) continue;
    assert.match(rel, /^\.git\/(objects\/|(logs\/)?refs\/(heads|remotes\/origin)\/run\/)/, `only the run branch was added: ${rel}`);
  }
  if (added.some((rel) => rel.startsWith(admin))) {
    assert.ok(readFileSync(path.join(f.project, admin, 'gitdir'), 'utf8').startsWith(path.join(f.home, 'pool') + path.sep), 'a worktree record left is the pool\'s');
  }
  assert.equal(git(f.project, 'show', `${r.json.branch}:mine.txt`), 'mine');
});

test('a replaced .git link fails the step as workspace_tampered; its work is saved as a patch, no hook runs', async () => {
  const f = await fixture();
  const marker = path.join(f.root, 'HOOK-RAN');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: swap
    run: |
      echo "work before the swap" > work.txt
      rm .git
      mkdir -p .git/hooks
      printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/pre-commit
      printf '#!/bin/sh\\ntouch ${marker}\\n' > .git/hooks/post-commit
      chmod +x .git/hooks/*
      printf '[core]\\n\\tfsmonitor = touch ${marker}\\n\\thooksPath = .git/hooks\\n' > .git/config
      echo "ref: refs/heads/main" > .git/HEAD
  - id: after
    run: echo never > never.txt
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.status, 'failed');
  assert.equal(r.json.error.code, 'workspace_tampered');
  assert.equal(r.json.steps.swap.status, 'failed');
  assert.equal(r.json.steps.swap.commit, null);
  assert.equal(r.json.steps.after.status, 'skipped');
  assert.equal(existsSync(marker), false, 'nothing the step planted ran on the host');
  assert.equal(commitsOn(f.project, r.json.branch, r.json.baseSha).length, 0, 'nothing was committed from the tampered worktree');
  const patch = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'swap.patch'), 'utf8');
  assert.match(patch, /\+\+\+ b\/work\.txt\n@@ .* @@\n\+work before the swap/);
  assert.doesNotMatch(patch, /hooks|fsmonitor/, 'the planted .git is not part of the patch');
  assert.equal(existsSync(path.join(f.home, 'worktrees', r.json.runId)), false, 'the worktree is removed');
  assert.match(r.stderr, /workspace_tampered|no longer the file git wrote/);
});

test('a symlink to a host file is committed as a symlink, never read through', async () => {
  const f = await fixture();
  const hostSecret = path.join(f.root, 'host-secret.txt');
  await writeFile(hostSecret, 'HOST-ONLY-CONTENT\n');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: links
    run: |
      ln -s ${hostSecret} leak
      ln -s /etc/shadow shadow
      ln -s / root
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  const tree = git(f.project, 'ls-tree', r.json.branch);
  assert.match(tree, /^120000 blob \w+\tleak$/m);
  assert.match(tree, /^120000 blob \w+\tshadow$/m);
  assert.match(tree, /^120000 blob \w+\troot$/m);
  assert.equal(git(f.project, 'cat-file', 'blob', `${r.json.branch}:leak`), hostSecret);
  assert.throws(() => git(f.project, 'grep', '-q', 'HOST-ONLY-CONTENT', r.json.branch), 'the host file content is in no commit');
});

test('an outputs file that is a symlink to a host file is not read', async () => {
  const f = await fixture();
  const hostFile = path.join(f.root, 'host-outputs.txt');
  await writeFile(hostFile, 'summary=LEAKED-FROM-HOST\n');
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: sneaky
    outputs: [word]
    run: |
      echo x > x.txt
      ln -sf ${hostFile} "$RUNNER_OUTPUT"
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /the outputs file is a symlink; it was not read/);
  const [c] = commitsOn(f.project, r.json.branch, r.json.baseSha);
  assert.equal(c!.subject, 'step/sneaky (runner/base:latest): completed');
  assert.doesNotMatch(r.stderr + r.stdout, /LEAKED-FROM-HOST/);
});

test('a FIFO, unreadable files and a locked directory neither hang nor lose the step\'s work', async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: traps
    timeout: 60s
    run: |
      mkfifo .gitignore
      mkdir -p sub/.git && mkfifo sub/.git/HEAD
      echo kept > kept.txt
      echo private > private.txt && chmod 000 private.txt
      mkdir locked && echo inside > locked/inside.txt && chmod 000 locked
`),
  );
  // (Under gVisor the FIFOs stay inside the sandbox, its gofer makes no host
  // node: the host side has nothing to hang on, the rest holds as under runc.)
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(git(f.project, 'show', `${r.json.branch}:kept.txt`), 'kept');
  assert.equal(git(f.project, 'show', `${r.json.branch}:private.txt`), 'private');
  assert.equal(git(f.project, 'show', `${r.json.branch}:locked/inside.txt`), 'inside');
  assert.deepEqual(await readdir(path.join(f.home, 'worktrees')), []);
});

test('git inside a step reads the repository and cannot write it', async () => {
  for (const owner of [undefined, 1000]) {
    const f = await fixture(owner === undefined ? {} : { owner });
    const file = await writePipeline(
      f,
      pipelineYaml(`  - id: look
    run: |
      echo change >> data.txt
      git status --short
      git log --format=%s -1
      git diff --stat
      if git commit -qam sneaky 2>/dev/null; then echo COMMITTED; else echo "commit refused"; fi
      if git config user.name evil 2>/dev/null; then echo CONFIGURED; else echo "config refused"; fi
`),
    );
    const r = await execPipeline(f, file);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /\[look\]  M data\.txt/);
    assert.match(r.stderr, /\[look\] initial/);
    assert.match(r.stderr, /\[look\] commit refused/);
    assert.match(r.stderr, /\[look\] config refused/);
    assert.deepEqual(
      commitsOn(f.project, r.json.branch, r.json.baseSha).map((c) => c.subject),
      ['step/look (runner/base:latest): completed'],
      'only the runner commits',
    );
  }
});
