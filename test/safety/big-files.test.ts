/**
 * The host side of a run stays bounded whatever a step writes: a step capped
 * at 256 MiB that leaves a 3 GB (sparse) file costs the runner and the git it
 * starts a few MB, the file is committed, and diff.patch is written (naming the
 * file rather than carrying 3 GB of it).
 */
import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
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
      truncate -s 20M "$(printf 'odd\\351name')"
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
  assert.ok(patch.includes('Binary files /dev/null and "b/odd\\351name" differ\n'), 'a name that is not UTF-8 is named, quoted as git quotes it');
  assert.ok(Buffer.byteLength(patch) < 64 * 1024, `the patch is ${Buffer.byteLength(patch)} bytes: no big file's content`);
  assert.match(r.stderr, /diff\.patch names 2 file\(s\) over 16 MiB without their content \(big\.bin, odd.name\)/);
  // the patch is what git reads: it checks against the base
  git(f.project, 'apply', '--check', '--exclude=big.bin', path.join(f.home, 'runs', r.json.runId, 'diff.patch'));

  const apply = await runCli(['apply', r.json.runId, '--home', f.home]);
  assert.equal(apply.code, 1, apply.stderr);
  assert.match(apply.stderr, /2 file\(s\) over 16 MiB \(big\.bin, odd.name\), which a patch does not carry: merge it instead/);
});

test('work that cannot be committed keeps its big files: the patch names them, a ref holds them', { timeout: 120_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    pipelineYaml(`  - id: tamper
    run: |
      truncate -s 40M big.bin
      echo small > small.txt
      rm -f .git && echo "gitdir: /tmp/elsewhere" > .git
`),
  );
  const r = await execPipeline(f, file);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.json.error.code, 'workspace_tampered');
  const ref = `refs/runner/saved/${r.json.runId}/tamper`;
  assert.match(r.stderr, new RegExp(`files over 16 MiB, big\\.bin, are named there; all of it is in ${ref}`));
  assert.equal(git(f.project, 'cat-file', '-s', `${ref}:big.bin`), String(40 * MiB));
  const patch = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'tamper.patch'), 'utf8');
  assert.match(patch, /Binary files \/dev\/null and b\/big\.bin differ/);
  assert.match(patch, /\+small/);

  // The kept work goes when its record is pruned (nothing else names it).
  const recFile = path.join(f.home, 'runs', r.json.runId, 'run.json');
  const rec = JSON.parse(await readFile(recFile, 'utf8'));
  rec.startedAt = new Date(Date.now() - 40 * 86_400_000).toISOString();
  await writeFile(recFile, JSON.stringify(rec));
  const pruned = await runCli(['runs', 'prune', '--older-than', '30d', '--yes', '--home', f.home]);
  assert.equal(pruned.code, 0, pruned.stderr);
  assert.throws(() => git(f.project, 'rev-parse', '--verify', '--quiet', ref), 'refs/runner/saved/<run>/ is removed with the record');
});
