/**
 * The host side of a run stays bounded whatever a step writes: a step capped
 * at 256 MiB that leaves a 3 GB (sparse) file costs the runner and the git it
 * starts a few MB, the file is committed, and diff.patch is written (naming the
 * file rather than carrying 3 GB of it).
 */
import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, pipelineYaml, projectsForThisFile, runCli, watchTreeMemory, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const MiB = 1024 * 1024;

test('a 3 GB sparse file: committed, diff.patch written, the host side under 512 MB', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: sparse
    resources: { memory: 256m, file_size: 4g }
    run: |
      truncate -s 3G big.bin
      echo small > small.txt
`),
  );
  let mem: ReturnType<typeof watchTreeMemory> | undefined;
  const r = await execPipeline(f, file, [], { onSpawn: (c) => (mem = watchTreeMemory(c.pid!)) });
  mem!.stop();
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.steps.sparse.status, 'completed');
  const one = mem!.peakOne() / MiB;
  const total = mem!.peakTotal() / MiB;
  console.log(`# 3 GB sparse file: host side peak ${one.toFixed(0)} MB in one process, ${total.toFixed(0)} MB at once (runner + git)`);
  assert.ok(one > 0 && total < 512, `host side peaked at ${total.toFixed(0)} MB`);

  assert.equal(git(f.project, 'cat-file', '-s', `${r.json.branch}:big.bin`), String(3 * 1024 ** 3), 'the file is committed whole');
  const patch = await readFile(path.join(f.home, 'runs', r.json.runId, 'diff.patch'), 'utf8');
  assert.match(patch, /^diff --git a\/big\.bin b\/big\.bin\nnew file mode 100644\nindex 0{40}\.\.[0-9a-f]{40}\nBinary files \/dev\/null and b\/big\.bin differ$/m);
  assert.match(patch, /\+small/);
  assert.match(r.stderr, /diff\.patch names 1 file\(s\) over 16 MiB without their content \(big\.bin\)/);
  // the patch is what git reads: it checks against the base
  git(f.project, 'apply', '--check', '--exclude=big.bin', path.join(f.home, 'runs', r.json.runId, 'diff.patch'));

  const apply = await runCli(['apply', r.json.runId, '--home', f.home]);
  assert.equal(apply.code, 1, apply.stderr);
  assert.match(apply.stderr, /over 16 MiB \(big\.bin\), which a patch does not carry: merge it instead/);
});
