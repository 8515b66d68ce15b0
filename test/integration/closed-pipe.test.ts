/**
 * A closed pipe ends a command quietly, as git does: `runner runs ls | head -1`
 * and `runner diff ID | head -1` print nothing on stderr and exit 141 (what a
 * shell reports for git there); `runner exec … | head -1` cancels its run
 * (its work committed, its container gone) and exits 141. The real CLI as a
 * child process whose stdout is a pipe to `head -1`,
 * on output long enough (past the pipe's 64 KiB) that the write really fails.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';
import { CLI, containersOfRun, execPipeline, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const execFileP = promisify(execFile);

/**
 * Runs the CLI as `runner ARGS | head -1` in bash, as a user would: head reads
 * one block, prints the first line and exits, so the CLI's next writes fail.
 * (A reader in this process would not do: under load, Node reads on ahead of
 * its own 'data' events, drains the whole pipe, and the CLI never meets the
 * closed pipe at all.) Resolves with head's line, the CLI's stderr and status.
 */
async function firstLineThenClose(args: string[]): Promise<{ first: string; stderr: string; code: number }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'closed-pipe-'));
  const errFile = path.join(dir, 'stderr');
  const script = '"$@" 2>"$ERR_FILE" | head -1; echo "${PIPESTATUS[0]}" > "$ERR_FILE.status"';
  const { stdout } = await execFileP('bash', ['-c', script, 'bash', process.execPath, CLI, ...args], {
    env: { ...process.env, CI: 'true', ERR_FILE: errFile },
    maxBuffer: 1 << 20,
  });
  try {
    const code = Number((await readFile(`${errFile}.status`, 'utf8')).trim());
    return { first: stdout.replace(/\n$/, ''), stderr: await readFile(errFile, 'utf8'), code };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

test('runs ls and diff into a pipe closed after the first line: nothing on stderr, exit 141', { timeout: 600_000 }, async () => {
  const f = await fixture();
  // one real run whose change is 40,000 lines (a diff of about 300 KB)
  const r = await execPipeline(f, await writePipeline(f, pipelineYaml('  - id: big\n    run: seq 1 40000 > big.txt\n')));
  assert.equal(r.code, 0, r.stderr);
  // and 3,000 more records like it (a listing of about 300 KB): copies of its record under other run ids
  const record = JSON.parse(await readFile(path.join(f.home, 'runs', r.json.runId, 'run.json'), 'utf8'));
  for (let i = 0; i < 3000; i++) {
    const runId = `20200101-000000-${i.toString(36).padStart(6, '0')}`;
    await mkdir(path.join(f.home, 'runs', runId));
    await writeFile(path.join(f.home, 'runs', runId, 'run.json'), JSON.stringify({ ...record, runId, branch: `run/${runId}` }));
  }

  const ls = await firstLineThenClose(['runs', 'ls', '--home', f.home]);
  assert.match(ls.first, /^RUN\s+PIPELINE\s+STATUS/);
  assert.equal(ls.stderr, '');
  assert.equal(ls.code, 141);

  const diff = await firstLineThenClose(['diff', r.json.runId, '--home', f.home]);
  assert.match(diff.first, /^diff --git a\/big\.txt b\/big\.txt$/);
  assert.equal(diff.stderr, '');
  assert.equal(diff.code, 141);

  const raw = await firstLineThenClose(['diff', r.json.runId, '--raw', '--home', f.home]);
  assert.equal(raw.stderr, '');
  assert.equal(raw.code, 141);
});

test('exec into a pipe closed after the first line: the run is canceled as on SIGPIPE, its work committed, no container left, exit 141', { timeout: 600_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, pipelineYaml('  - id: talk\n    run: |\n      echo started > started.txt\n      seq 1 100000\n      sleep 60\n'));
  const r = await firstLineThenClose(['exec', file, '--home', f.home]);
  assert.equal(r.first, '[talk] 1');
  assert.equal(r.code, 141, r.stderr);
  assert.match(r.stderr, /runner: warning: SIGPIPE: canceling; the step is stopped, its work committed/);
  const [runId] = await readdir(path.join(f.home, 'runs'));
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId!, 'run.json'), 'utf8'));
  assert.equal(rec.status, 'canceled');
  assert.equal(git(f.project, 'show', `${rec.branch}:started.txt`), 'started', "the step's work is on its branch");
  assert.deepEqual(containersOfRun(runId!), []);
  assert.deepEqual(await readdir(path.join(f.home, 'worktrees')), [], 'the worktree went');
});
