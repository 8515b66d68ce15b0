/**
 * The pip poisoning of issue 36 through a persistent directory (found by the attack helper atk36b). A persistent
 * directory's caches are the project's (keyed by its real path), shared with every pipeline of the project, git
 * worktree runs among them. A run's agent leaves a script in the directory (the directory is the project, edited in
 * place: nothing is reviewed); the next run's first step, before any agent of its run, runs it (the agent rewrote
 * what the step runs: the test helper, the Makefile, conftest.py), and it swaps the wheel pip built from the pinned
 * sdist. No step of a persistent directory writes the caches (it holds what earlier runs' agents left), so the swap
 * lands in the step's throw-away layer, and a later verify on a clean worktree (--require-hashes --no-index)
 * installs the genuine package.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { PIP_INSTALL, writePipVictim } from '../fixtures/pip-victim.js';
import { execPipeline, git, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
const KEY = 'sk-ant-api03-scripted-pip-persistent-000';

const SWAP = `printf '%s\\n' 'find "$PIP_CACHE_DIR/wheels" -name "victim-1.0-*.whl" -exec cp evil/victim-1.0-py3-none-any.whl {} \\; -print' > /home/agent/run-workspace/tools/warm.sh && echo wrote`;

test("what an agent leaves in a persistent directory, run by the next run's first step, does not reach the project's pip cache: a clean worktree's verify installs the genuine package", { timeout: 400_000 }, async () => {
  const f = await fixture();
  await writePipVictim(f.project);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'a pinned sdist, and an attacker\'s wheel');
  execFileSync('chown', ['-R', '1000:1000', f.project]);
  const gitRun = (name: string) => `version: 1
name: ${name}
project: { path: project }
defaults: { image: runner/toolchain:latest, timeout: 2m, cache: [pip], network: none }
steps:
  - id: verify
    verify: true
    run: ${PIP_INSTALL}
`;
  // pip builds the wheel from the pinned sdist into the project's cache (a trusted step of a clean run)
  const seed = await execPipeline(f, await writePipeline(f, gitRun('seed'), 'seed.yaml'));
  assert.equal(seed.code, 0, seed.stderr);

  const server = await ModelServer.start({ turns: [{ tool: { name: 'Bash', input: { command: SWAP, description: 'a helper' } } }, { text: 'Done.' }], usage: { input: 100, output: 10 } });
  servers.push(server);
  const persistent = (steps: string, agents = '') => `version: 1
name: in-place
project: { path: ${f.project}, workspace: persistent_directory }
${agents ? 'secrets: [ANTHROPIC_API_KEY]\n' : ''}defaults: { image: runner/toolchain:latest, timeout: 2m, cache: [pip], resources: { memory: 512m, cpus: 1, pids: 256 } }
${agents}steps:
${steps}`;
  const agentRun = await execPipeline(
    f,
    await writePipeline(f, persistent('  - id: implement\n    agent: coder\n    prompt: Add a helper.\n', `agents:\n  coder: { use: claude-code, base_url: ${server.url}, max_turns: 4 }\n`), 'agent.yaml'),
    [],
    { env: { ANTHROPIC_API_KEY: KEY } },
  );
  assert.equal(agentRun.code, 0, agentRun.stderr);
  const next = await execPipeline(f, await writePipeline(f, persistent('  - id: test\n    network: none\n    run: sh tools/warm.sh\n'), 'next.yaml'));
  assert.equal(next.code, 0, next.stderr);
  const nextLog = await readFile(path.join(f.home, 'runs', next.json.runId, 'steps', 'test.log'), 'utf8');
  assert.match(nextLog, /victim-1\.0-py3-none-any\.whl/, "the agent's script found the cached wheel");
  assert.match(nextLog, /cache pip: read, not written \(it works in the persistent directory /, 'and swapped it in its throw-away layer');

  const verify = await execPipeline(f, await writePipeline(f, gitRun('verify'), 'verify.yaml'));
  assert.equal(verify.code, 0, verify.stderr);
  const log = await readFile(path.join(f.home, 'runs', verify.json.runId, 'steps', 'verify.log'), 'utf8');
  assert.doesNotMatch(log, /PWNED/, 'a clean run of the project is handed what the agent left in the persistent directory');
  assert.match(log, /victim: genuine/);
});
