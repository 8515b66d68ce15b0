/**
 * Cleanup handles any tree a step can make: a path of 4,400 characters (beyond
 * PATH_MAX), a directory made unreadable, 20,000 files, in the worktree and in
 * the step's own io directory. Nothing is left in the runner home.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

test('a deep, locked, crowded tree is committed where git can see it and removed with the worktree', { timeout: 180_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: burrow
    run: |
      mkdir many && (cd many && seq 1 20000 | xargs touch)
      mkdir locked && echo secret > locked/f && chmod 000 locked
      echo top > top.txt
      # 400 levels of 11 characters: built as two halves (a shell cannot cd past PATH_MAX), the second moved into the first
      half=$(printf 'dddddddddd/%.0s' $(seq 1 200))
      for where in . /home/agent/.runner; do
        mkdir -p "$where/deep/$half" "$where/next/$half"
        echo bottom > "$where/next/$half/deep.txt"
        mv "$where/next" "$where/deep/$half"
      done
      chmod 000 /home/agent/.runner/deep
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 0, r.stderr.slice(-3000));
  assert.equal(r.json.steps.burrow.status, 'completed');
  assert.deepEqual(await readdir(path.join(f.home, 'worktrees')), [], 'the worktree is removed');
  assert.deepEqual(await readdir(path.join(f.home, 'runs', r.json.runId, 'io')), [], "the step's io directory is removed");
  assert.doesNotMatch(r.stderr, /could not remove|ENAMETOOLONG/);
  const tree = git(f.project, 'ls-tree', '-r', '--name-only', r.json.branch);
  assert.match(tree, /^top\.txt$/m);
  assert.match(tree, /^many\/20000$/m);
  assert.match(tree, /^locked\/f$/m, 'a directory made unreadable is still committed');
  assert.equal(git(f.project, 'worktree', 'list', '--porcelain').split('\n').filter((l) => l.startsWith('worktree ')).length, 1, 'git knows no leftover worktree');
});
