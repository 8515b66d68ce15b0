/** Operator commands on run records: runs ls/show/prune, logs, diff, push. */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { execPipeline, git, pipelineYaml, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

const TWO_STEPS = `  - id: one
    run: echo "first line" && echo a > a.txt
  - id: two
    run: echo "second line" && echo b > b.txt && exit 2
`;

test('runs ls filters by pipeline and status; runs show, logs and diff tell what a run did', async () => {
  const f = await fixture();
  const ok = await execPipeline(f, await writePipeline(f, pipelineYaml('  - id: one\n    run: echo ok > ok.txt\n'), 'ok.yaml'));
  const bad = await execPipeline(f, await writePipeline(f, pipelineYaml(TWO_STEPS).replace('name: it', 'name: other'), 'bad.yaml'));
  assert.equal(ok.code, 0);
  assert.equal(bad.code, 1);

  const all = await runCli(['runs', 'ls', '--home', f.home]);
  assert.equal(all.code, 0, all.stderr);
  const lines = all.stdout.trim().split('\n');
  assert.match(lines[0]!, /^RUN\s+PIPELINE\s+STATUS\s+STARTED\s+DURATION\s+BRANCH$/);
  assert.match(lines[1]!, new RegExp(`^${bad.json.runId}\\s+other\\s+failed\\s`), 'newest first');
  assert.match(lines[2]!, new RegExp(`^${ok.json.runId}\\s+it\\s+succeeded\\s`));
  const failed = JSON.parse((await runCli(['runs', 'ls', '--home', f.home, '--status', 'failed', '--json'])).stdout);
  assert.deepEqual(failed.map((r: any) => r.runId), [bad.json.runId]);
  const byPipeline = JSON.parse((await runCli(['runs', 'ls', '--home', f.home, '--pipeline', 'it', '--json'])).stdout);
  assert.deepEqual(byPipeline.map((r: any) => r.runId), [ok.json.runId]);

  const show = await runCli(['runs', 'show', bad.json.runId, '--home', f.home]);
  assert.match(show.stdout, /status\s+failed/);
  assert.match(show.stdout, /two\s+failed\s+2/);

  const logs = await runCli(['logs', bad.json.runId, '--home', f.home]);
  assert.equal(logs.stdout, '[one] first line\n[two] second line\n');
  const one = await runCli(['logs', bad.json.runId, '--step', 'two', '--home', f.home]);
  assert.equal(one.stdout, 'second line\n');

  const diff = await runCli(['diff', bad.json.runId, '--home', f.home]);
  assert.match(diff.stdout, /\+\+\+ b\/a\.txt/);
  assert.match(diff.stdout, /\+\+\+ b\/b\.txt/, 'the failed step\'s work is in the run\'s diff too');
  assert.equal((await runCli(['runs', 'show', 'no-such-run', '--home', f.home])).code, 2);
});

test('logs --follow streams a live run until it ends', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml(`  - id: ticker\n    run: |\n      for i in 1 2 3; do echo "tick $i"; sleep 1; done\n`));
  let runId = '';
  let follow: Promise<{ stdout: string }> | undefined;
  const run = execPipeline(f, file, [], {
    onLine: (line) => {
      const m = /\[ticker\] tick 1/.test(line);
      if (m && !follow) {
        follow = (async () => {
          const ls = JSON.parse((await runCli(['runs', 'ls', '--home', f.home, '--json'])).stdout);
          runId = ls[0].runId;
          return runCli(['logs', runId, '--follow', '--home', f.home]);
        })();
      }
    },
  });
  assert.equal((await run).code, 0);
  const followed = await follow!;
  assert.equal(followed.stdout, '[ticker] tick 1\n[ticker] tick 2\n[ticker] tick 3\n');
});

test('runner push pushes again a branch whose push failed', async () => {
  const f = await fixture();
  const realRemote = git(f.project, 'remote', 'get-url', 'origin');
  git(f.project, 'remote', 'set-url', 'origin', path.join(f.root, 'gone.git'));
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml('  - id: a\n    run: echo a > a.txt\n')));
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.json.pushed, false);
  assert.match(r.stderr, /push it later with: git -C/);
  git(f.project, 'remote', 'set-url', 'origin', realRemote);
  const p = await runCli(['push', r.json.runId, '--home', f.home]);
  assert.equal(p.code, 0, p.stderr);
  assert.equal(git(f.remote, 'rev-parse', r.json.branch), r.json.headSha);
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  assert.equal(rec.pushed, true);
});

test('runs prune removes old records only with --yes, and with --branches the undelivered run branches', async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml('  - id: a\n    run: echo a > a.txt\n', '  push: never'));
  const old = await execPipeline(f, file);
  const recent = await execPipeline(f, file);
  const oldRecord = path.join(f.home, 'runs', old.json.runId, 'run.json');
  const rec = JSON.parse(await readFile(oldRecord, 'utf8'));
  rec.startedAt = new Date(Date.now() - 40 * 86_400_000).toISOString();
  await writeFile(oldRecord, JSON.stringify(rec));
  await utimes(oldRecord, new Date(), new Date());

  const dry = await runCli(['runs', 'prune', '--older-than', '30d', '--branches', '--home', f.home]);
  assert.equal(dry.code, 0, dry.stderr);
  assert.match(dry.stdout, /1 run record\(s\) older than 30d, and 1 run branch\(es\) never delivered would be removed\nRUN +PIPELINE +STATUS +STARTED +BRANCH\n/);
  assert.match(dry.stdout, new RegExp(`^${old.json.runId} .* ${old.json.branch} \\(removed\\)$`, 'm'), 'the dry run lists the runs it would remove');
  assert.doesNotMatch(dry.stdout, new RegExp(recent.json.runId));
  assert.match(dry.stdout, /nothing removed: run again with --yes/);
  assert.ok(existsSync(oldRecord));
  const unitless = await runCli(['runs', 'prune', '--older-than', '30', '--home', f.home]);
  assert.equal(unitless.code, 2);
  assert.match(unitless.stderr, /--older-than 30 has no unit: say 30d for days/);

  const wet = await runCli(['runs', 'prune', '--older-than', '30d', '--branches', '--yes', '--home', f.home]);
  assert.equal(wet.code, 0, wet.stderr);
  assert.equal(existsSync(oldRecord), false);
  assert.ok(existsSync(path.join(f.home, 'runs', recent.json.runId, 'run.json')));
  assert.throws(() => git(f.project, 'rev-parse', '--verify', old.json.branch));
  assert.equal(git(f.project, 'rev-parse', recent.json.branch), recent.json.headSha);
});
