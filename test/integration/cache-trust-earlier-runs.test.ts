/**
 * Who writes a project's caches when a run's workspace begins with what an earlier run's agent left (safety promise
 * 15), played for real with the real Claude Code driven by the scripted model:
 * - a task's worktree: the first run's agent commits a script on the task's branch; the task's next run begins on
 *   that branch, and its first step (no agent before it in its own run) runs the script. It only reads the caches.
 * - a fork from a step after an agent step that failed: the fork's branch begins with the failed agent's commit,
 *   which is not carried; a step of the fork that runs beside the agent's new attempt runs that commit's script. It
 *   only reads the caches.
 * - a resume after the runner died in an agent step: recovery commits the agent's leftovers on the run's branch
 *   and records the step as an agent's, interrupted; the resume runs again a step before it that had failed (and
 *   was tolerated), which runs the script. It only reads the caches.
 * In all three, the planted file never reaches the project's cache, while a step before any agent of a fresh task does
 * write it.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { execPipeline, projectsForThisFile, runCli, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
const KEY = 'sk-ant-api03-scripted-cache-earlier-0000000';

/** the agent's one command: a script in the workspace that writes into whatever npm cache runs it (a poisoned postinstall, a test helper) */
const PLANT = `mkdir -p /home/agent/run-workspace/tools && printf '%s\\n' 'echo planted > "$npm_config_cache/planted-by-earlier-agent"' > /home/agent/run-workspace/tools/fill.sh && echo wrote-the-script`;

async function cacheFiles(home: string): Promise<string[]> {
  const root = path.join(home, 'caches');
  const out: string[] = [];
  for (const k of await readdir(root).catch(() => [] as string[])) out.push(...(await readdir(path.join(root, k, 'npm', 'data')).catch(() => [] as string[])));
  return out.sort();
}

const header = (server: ModelServer, name: string, extra = '') => `version: 1
name: ${name}
project: { path: project }
secrets: [ANTHROPIC_API_KEY]
${extra}defaults:
  image: runner/toolchain:latest
  resources: { memory: 512m, cpus: 1, pids: 256 }
  timeout: 2m
  cache: [npm]
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 5
`;

test("a task's next run begins on what its first run's agent committed: its first step only reads the caches", { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: [{ tool: { name: 'Bash', input: { command: PLANT, description: 'plant' } } }, { text: 'Done.' }],
    usage: { input: 100, output: 10 },
  });
  servers.push(server);
  const first = await execPipeline(
    f,
    await writePipeline(
      f,
      `${header(server, 'task-first')}steps:
  - id: seed
    run: echo seeded-by-a-fresh-task > "$npm_config_cache/seeded"
  - id: implement
    agent: coder
    prompt: Add a helper script.
`,
    ),
    ['--task', 'T1'],
    { env: { ANTHROPIC_API_KEY: KEY } },
  );
  assert.equal(first.code, 0, first.stderr);
  const firstLog = await readFile(path.join(f.home, 'runs', first.json.runId, 'steps', 'seed.log'), 'utf8');
  assert.doesNotMatch(firstLog, /read, not written/, "a fresh task's worktree holds only the project's commits: its first step writes");
  assert.deepEqual(await cacheFiles(f.home), ['seeded']);

  const second = await execPipeline(
    f,
    await writePipeline(
      f,
      `version: 1
name: task-next
project: { path: project }
defaults: { image: runner/toolchain:latest, timeout: 1m, cache: [npm] }
steps:
  - id: setup
    run: test -f tools/fill.sh && sh tools/fill.sh && ls "$npm_config_cache"
`,
      'next.yaml',
    ),
    ['--task', 'T1'],
  );
  assert.equal(second.code, 0, second.stderr);
  const log = await readFile(path.join(f.home, 'runs', second.json.runId, 'steps', 'setup.log'), 'utf8');
  assert.match(log, /planted-by-earlier-agent/, "the script the first run's agent committed ran in the next run's first step");
  assert.match(log, /cache npm: read, not written \(it works in task T1's worktree \(feat\/T1\), which holds what earlier runs left, their agents' work among them\)/);
  assert.deepEqual(await cacheFiles(f.home), ['seeded'], "what the earlier agent's script planted is thrown away");
});

test("a fork from a step after an agent step that failed begins with the agent's commit: a step beside the agent's new attempt only reads the caches", { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  // the agent writes its script, then its model hangs: the step times out, its work committed and merged
  const server = await ModelServer.start({
    turns: [{ tool: { name: 'Bash', input: { command: PLANT, description: 'plant' } } }, { text: 'Done.' }],
    hangAfter: 1,
    usage: { input: 100, output: 10 },
  });
  servers.push(server);
  const file = await writePipeline(
    f,
    `${header(server, 'fork-after-agent', 'max_parallel: 2\n')}steps:
  - id: implement
    agent: coder
    prompt: Add a helper script.
    timeout: 25s
  - id: check
    needs: []
    run: |
      sleep 32
      if [ -f tools/fill.sh ]; then sh tools/fill.sh; fi
      ls "$npm_config_cache"
`,
  );
  const prior = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.notEqual(prior.code, 0, 'the agent step timed out');
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', prior.json.runId, 'run.json'), 'utf8')) as { steps: Array<{ id: string; status: string; lane?: { merge: string } }> };
  assert.deepEqual(
    rec.steps.map((s) => [s.id, s.status === 'completed', s.lane?.merge]),
    [
      ['implement', false, 'merged'],
      ['check', true, 'unchanged'],
    ],
    JSON.stringify(rec.steps),
  );
  assert.deepEqual(await cacheFiles(f.home), [], 'check ran on the base, in a lane of its own: nothing planted, nothing written');

  const fork = await runCli(['fork', prior.json.runId, '--from', 'check', '--json', '--home', f.home], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.ok(fork.json?.runId, fork.stderr);
  const forkId = fork.json.runId as string;
  const log = await readFile(path.join(f.home, 'runs', forkId, 'steps', 'check.log'), 'utf8');
  assert.match(log, /planted-by-earlier-agent/, "the fork's check ran the failed agent's script");
  assert.match(log, /cache npm: read, not written \(it runs after agent step implement, whose work it may run\)/);
  assert.deepEqual(await cacheFiles(f.home), [], "what the failed agent's script planted is thrown away");
});

test("a resume after the runner died in an agent step: its leftovers are on the run's branch, and a step the resume runs before the agent again only reads the caches", { timeout: 300_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start({
    turns: [{ tool: { name: 'Bash', input: { command: PLANT, description: 'plant' } } }, { text: 'Done.' }],
    hangAfter: 1,
    usage: { input: 100, output: 10 },
  });
  servers.push(server);
  const file = await writePipeline(
    f,
    `${header(server, 'resume-after-crash')}steps:
  - id: prep
    continue_on_error: true
    run: |
      if [ -f tools/fill.sh ]; then sh tools/fill.sh; fi
      ls "$npm_config_cache"
      exit 1
  - id: implement
    agent: coder
    prompt: Add a helper script.
    timeout: 25s
`,
  );
  // the runner dies (-9) once the agent wrote its script and waits for its model
  let child: ReturnType<typeof spawn> | undefined;
  const killer = setInterval(() => {
    if (server.agentRequests().length >= 2) child?.kill('SIGKILL');
  }, 100);
  const died = await runCli(['exec', file, '--home', f.home], { env: { ANTHROPIC_API_KEY: KEY }, onSpawn: (c) => (child = c) });
  clearInterval(killer);
  assert.equal(died.signal, 'SIGKILL', died.stderr);
  const [runId] = await readdir(path.join(f.home, 'runs'));

  const resumed = await runCli(['resume', runId!, '--json', '--home', f.home], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.ok(resumed.json, resumed.stderr);
  const rec = JSON.parse(await readFile(path.join(f.home, 'runs', runId!, 'run.json'), 'utf8')) as { steps: Array<{ id: string; name?: string; status: string; agent?: string }> };
  const again = rec.steps.find((s) => s.id === 'prep' && s.name !== undefined)!;
  const log = await readFile(path.join(f.home, 'runs', runId!, 'steps', `${again.name}.log`), 'utf8');
  assert.match(log, /planted-by-earlier-agent/, "the resumed prep ran the interrupted agent's script");
  assert.match(log, /cache npm: read, not written \(it runs after agent step implement, whose work it may run\)/);
  assert.deepEqual(await cacheFiles(f.home), [], "what the interrupted agent's script planted is thrown away");
  assert.ok(rec.steps.some((s) => s.id === 'implement' && s.status === 'interrupted' && s.agent === 'coder'), JSON.stringify(rec.steps));
});

