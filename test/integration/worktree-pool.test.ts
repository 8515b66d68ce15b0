/**
 * The worktree pool through `runner exec`, real containers: a run whose step
 * leaves everything a step can leave gives its worktree back to the pool; the
 * next run, which claims it, sees a tree identical to what a run on a fresh
 * worktree sees (a step lists every entry's type, mode, owner, links, size,
 * content hash and symlink target).
 */
import assert from 'node:assert/strict';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execFileSync } from 'node:child_process';
import { execPipeline, git, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const dirty = `version: 1
name: dirty
project: { path: project, push: never }
steps:
  - id: leave
    image: runner/base:latest
    run: |
      mkdir -p build && head -c 100000 /dev/urandom > build/out.bin
      echo ignored > app.log
      echo untracked > notes.txt
      echo changed > src/a/b/c.txt
      rm bin/run.sh
      printf 'build/\\n*.log\\nsecret/\\n' > .gitignore
      mkdir -p secret && echo for-the-next-run > secret/left
      chmod 600 src/keep.txt
      chmod 700 src/a
      echo no one reads me > unreadable.txt && chmod 000 unreadable.txt
      ln README.md hard-link
      rm link && mkdir link && echo inside > link/inside
      mkfifo pipe
`;

const look = `version: 1
name: look
project: { path: project, push: never }
steps:
  - id: list
    image: runner/base:latest
    run: |
      m=$(find . -path ./.git -prune -o -printf '%y %m %u:%g n%n %s %p -> %l\\n' | sort)
      h=$(find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0 -r sha256sum)
      printf '%s\\n%s\\n' "$m" "$h" > manifest.txt
`;

test('a run on a pooled worktree, after a run that left everything a step can leave, sees what a run on a fresh one sees', { timeout: 180_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const p = f.project;
  await mkdir(path.join(p, 'src/a/b'), { recursive: true });
  await mkdir(path.join(p, 'bin'));
  await writeFile(path.join(p, 'src/a/b/c.txt'), 'deep\n');
  await writeFile(path.join(p, 'src/keep.txt'), 'kept\n');
  await writeFile(path.join(p, 'bin/run.sh'), '#!/bin/sh\necho run\n', { mode: 0o755 });
  await writeFile(path.join(p, '.gitignore'), 'build/\n*.log\n');
  await symlink('src/a', path.join(p, 'link'));
  git(p, 'add', '-A');
  git(p, '-c', 'user.name=t', '-c', 'user.email=t@l', 'commit', '-qm', 'tree');
  execFileSync('chown', ['-R', '1000:1000', p]);

  const first = await execPipeline(f, await writePipeline(f, dirty, 'dirty.yaml'));
  assert.equal(first.code, 0, first.stderr);
  const poolDir = path.join(f.home, 'pool');
  const slots = async () => (await Promise.all((await readdir(poolDir)).map((k) => readdir(path.join(poolDir, k))))).flat();
  assert.equal((await slots()).length, 1, 'the dirty run\'s worktree went back to the pool');

  const lookFile = await writePipeline(f, look, 'look.yaml');
  const pooled = await execPipeline(f, lookFile);
  assert.equal(pooled.code, 0, pooled.stderr);
  const fresh = await execPipeline(f, lookFile, [], { env: { RUNNER_WORKTREE_POOL: '0' } });
  assert.equal(fresh.code, 0, fresh.stderr);
  const seenPooled = git(p, 'show', `${pooled.json.branch}:manifest.txt`);
  const seenFresh = git(p, 'show', `${fresh.json.branch}:manifest.txt`);
  assert.match(seenFresh, /^l 777 \S+ n1 \d+ \.\/link -> src\/a$/m, 'the listing shows symlinks');
  assert.match(seenFresh, /^f 755 \S+ n1 \d+ \.\/bin\/run\.sh -> $/m, 'and modes');
  assert.equal(seenPooled, seenFresh);
  assert.equal((await slots()).length, 1, 'the pooled run gave it back; the fresh one, with the pool off, removed its own');
});
