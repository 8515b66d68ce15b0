import assert from 'node:assert/strict';
import { test } from 'node:test';
import { parseUncommitted, uncommittedNotice } from '../../src/workspace/uncommitted.js';

test('porcelain -z entries: untracked, modified, deleted, renamed (its old path skipped), the pipeline file left out', () => {
  const z = ['?? TASK.md', ' M src/a.js', 'D  old.txt', 'R  new.js', 'was.js', 'A  added.js', '?? runner.yaml', ''].join('\0');
  const u = parseUncommitted(z, ['runner.yaml']);
  assert.equal(u.count, 5);
  assert.deepEqual(u.named, ['TASK.md (untracked)', 'src/a.js (modified)', 'old.txt (deleted)', 'new.js (renamed)', 'added.js (added, not committed)']);
});

test('the notice names a few, counts the rest and says how to include them; nothing left out, no notice', () => {
  assert.equal(uncommittedNotice({ named: [], count: 0 }, 'abc'), undefined);
  const n = uncommittedNotice(parseUncommitted(Array.from({ length: 8 }, (_, i) => `?? f${i}`).join('\0')), '0123456789abcdef');
  assert.match(n!, /^the project has 8 uncommitted changes this run will not see \(it starts from the commit 0123456789\): f0 \(untracked\), .*f4 \(untracked\), and 3 more\. To include them, commit them first/);
});
