/**
 * A hundred runs waiting at a gate at once hold nothing: each started by a
 * real `runner exec --no-wait-at-gate` (a gate first, so each is cheap), a few
 * at a time on one project; then every record says awaiting_approval, no
 * container of the home exists, no worktree is left, and one of them still
 * goes on when approved. The wall time is printed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { IMAGE, otherWorktrees, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const RUNS = 100;
const AT_ONCE = 5;

test(`${RUNS} runs waiting at a gate at once: every record awaiting_approval, no container, no worktree`, { timeout: 300_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(
    f,
    `version: 1
name: many
project: { path: ${f.project}, push: never }
defaults: { image: ${IMAGE}, timeout: 1m }
steps:
  - id: approve
    approval: { prompt: "Go?", timeout: 1h }
  - id: after
    run: echo "$RUNNER_APPROVAL_COMMENT" > after.txt
`,
  );
  const t0 = Date.now();
  const ids: string[] = [];
  const said = new Map<string, string>();
  let next = 0;
  const worker = async () => {
    while (next < RUNS) {
      next++;
      const r = await runCli(['exec', file, '--json', '--no-wait-at-gate', '--home', f.home]);
      assert.equal(r.code, 0, r.stderr);
      assert.equal(r.json.status, 'awaiting_approval', r.stderr);
      ids.push(r.json.runId);
      said.set(r.json.runId, r.stderr);
    }
  };
  await Promise.all(Array.from({ length: AT_ONCE }, worker));
  const started = Date.now() - t0;
  console.log(`${RUNS} runs brought to their gate in ${(started / 1000).toFixed(1)} s, ${AT_ONCE} at a time`);

  assert.equal(new Set(ids).size, RUNS);
  const records = await Promise.all(ids.map(async (id) => JSON.parse(await readFile(path.join(f.home, 'runs', id, 'run.json'), 'utf8'))));
  assert.deepEqual([...new Set(records.map((r) => r.status))], ['awaiting_approval']);
  assert.ok(records.every((r) => r.gate?.name === 'approve' && r.cleanup === null));
  const containers = execFileSync('docker', ['ps', '-a', '-q', '--filter', `label=dev.runner.home=${f.home}`], { encoding: 'utf8' }).trim();
  assert.equal(containers, '', 'no container of these runs exists, running or not');
  for (const id of ids) assert.equal(execFileSync('docker', ['ps', '-a', '-q', '--filter', `label=dev.runner.run-id=${id}`], { encoding: 'utf8' }).trim(), '', id);
  const left = (await readdir(path.join(f.home, 'worktrees')).catch(() => [])).filter((n) => ids.includes(n));
  // what the runner said of a worktree left, and what is in it: a failure here must say where to look
  const why = left.map((id) => `${id}: ${execFileSync('ls', ['-la', path.join(f.home, 'worktrees', id)], { encoding: 'utf8' })}\nits runner said: ${said.get(id)}`).join('\n');
  assert.deepEqual(left, [], `no worktree directory\n${why}`);
  assert.deepEqual(otherWorktrees(f), [], 'git knows no worktree of theirs');

  // and each still goes on when decided
  const one = ids[0]!;
  const a = await runCli(['approve', one, '--comment', 'the first of a hundred', '--home', f.home]);
  assert.equal(a.code, 0, a.stderr);
  assert.equal(JSON.parse(await readFile(path.join(f.home, 'runs', one, 'run.json'), 'utf8')).status, 'succeeded');
  console.log(`${RUNS} waiting runs checked and one approved in ${((Date.now() - t0) / 1000).toFixed(1)} s in all`);
});
