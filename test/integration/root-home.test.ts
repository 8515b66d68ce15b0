/**
 * As root, against a project owned by uid 1000, as a new user would: the
 * default home works, a home the owner cannot reach is refused before
 * anything is made, and no branch is left that no record names.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmod, mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { test } from 'node:test';
import { CLI, git, pipelineYaml, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();

/** runner with the environment a root shell has: no RUNNER_HOME. */
function runner(args: string[]) {
  const env: NodeJS.ProcessEnv = { ...process.env, CI: 'true' };
  delete env.RUNNER_HOME;
  delete env.XDG_STATE_HOME;
  const r = spawnSync(process.execPath, [CLI, ...args], { env, encoding: 'utf8' });
  const last = r.stdout.trim().split('\n').pop() ?? '';
  return { code: r.status, stdout: r.stdout, stderr: r.stderr, json: last.startsWith('{') ? JSON.parse(last) : undefined };
}

test("root's default home, /var/lib/runner, works on a uid-1000 project", async () => {
  assert.equal(process.getuid?.(), 0, 'the integration tests run as root (as CI does)');
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, pipelineYaml('  - id: s\n    run: echo hi > hi.txt\n'));
  const r = runner(['exec', file, '--json']);
  try {
    assert.equal(r.code, 0, r.stderr);
    assert.equal(git(f.project, 'show', `${r.json.branch}:hi.txt`), 'hi');
    const shown = runner(['runs', 'show', r.json.runId]);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /status\s+succeeded/);
  } finally {
    if (r.json?.runId) await rm(path.join('/var/lib/runner/runs', r.json.runId), { recursive: true, force: true });
  }
});

test("a home the project's owner cannot reach is refused before anything is made: exit 2, the directory, the uid, the fix", async () => {
  const f = await fixture({ owner: 1000 });
  const file = await writePipeline(f, pipelineYaml('  - id: s\n    run: echo hi > hi.txt\n'));
  const closed = path.join(f.root, 'closed');
  await mkdir(closed);
  await chmod(closed, 0o700);
  const home = path.join(closed, 'home');
  for (const extra of [[], ['--task', 'T-9']]) {
    const r = runner(['exec', file, '--home', home, ...extra]);
    assert.equal(r.code, 2, r.stderr);
    assert.match(r.stderr, new RegExp(`the runner home ${home} cannot be reached by uid 1000, who owns ${f.project}`));
    assert.match(r.stderr, new RegExp(`${closed} \\(mode 700, owner uid 0\\)`));
    assert.match(r.stderr, /Use a home every project owner can reach: the default for root, \/var\/lib\/runner/);
    assert.equal(git(f.project, 'branch', '--list', 'run/*', 'feat/*'), '', 'no branch left behind');
    for (const d of ['runs', 'worktrees', 'tasks']) assert.deepEqual(await readdir(path.join(home, d)).catch(() => []), [], `nothing in the home's ${d}/`);
  }
});
