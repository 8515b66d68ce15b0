import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { test } from 'node:test';
import { branchNameProblem } from '../../src/delivery/branch-name.js';

const names = [
  'main', 'feature/x', 'release-1.2', 'a.b', 'maéin', 'HEAD', 'x'.repeat(255),
  'main@{0}', 'main@{1}', '@', '..', 'main/../main', 'main.lock', 'a/b.lock/c', '/main', 'main/', 'a//b', '.main', 'a/.b', 'main.',
  '-x', '--upload-pack=x', 'a b', 'a\tb', 'a\u007fb', 'main~0', 'main^{tree}', 'a:b', 'a?b', 'a*b', 'a[b', 'a\\b', '', 'x'.repeat(256),
];

test('attack: a merge target that git would read as a revision (main@{0}) or refuse as a ref is not a branch name', () => {
  for (const n of ['main@{0}', 'main@{1}', '@', '..', 'main/../main', 'main.lock', '/main', 'main/', '.main', 'main.', '-x', 'a b', 'main~0', '']) {
    assert.ok(branchNameProblem(n), `${JSON.stringify(n)} is refused`);
  }
  for (const n of ['main', 'feature/x', 'release-1.2', 'maéin']) assert.equal(branchNameProblem(n), undefined, n);
});

test('branch names are judged as git check-ref-format judges refs/heads/<name>', () => {
  // refs/heads/@ is a well-formed ref, but "@" alone is HEAD to git, and git branch refuses it: so do we.
  for (const n of names.filter((x) => x.length <= 255 && !x.startsWith('-') && x !== '@')) {
    let git = true;
    try {
      execFileSync('git', ['check-ref-format', `refs/heads/${n}`], { stdio: 'ignore' });
    } catch {
      git = false;
    }
    assert.equal(branchNameProblem(n) === undefined, git, `${JSON.stringify(n)}: git says ${git ? 'yes' : 'no'}`);
  }
});
