/**
 * The pip cache poisoning of issue 36, replayed with pip 25 (Debian trixie's wheel; Debian 12's pip 23.0.1 is
 * older than the trust it abuses). A first step, before any agent, installs an sdist pinned by hash: pip builds a
 * wheel and keeps it in the project's pip cache with an origin.json naming the sdist's hash. Then the agent (the
 * real Claude Code, its shell driven by the scripted model) overwrites that wheel with its own. The next run's
 * verify installs with --require-hashes --no-index.
 *
 * Played twice: where the file trusts the agent step with the cache (`{ pip: rw }`, as every step was trusted
 * before), the verify installs the attacker's wheel and runs its code, which writes a file the run commits: the
 * attack is real. By default the agent's write lands in a throw-away layer, and the verify installs the genuine
 * package.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { PIP_INSTALL, writePipVictim } from '../fixtures/pip-victim.js';
import { execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
const KEY = 'sk-ant-api03-scripted-pip-poisoning-00000';

const poisonRun = (server: ModelServer, agentCache: string) => `version: 1
name: pip-poison
project: { path: project }
secrets: [ANTHROPIC_API_KEY]
defaults:
  image: runner/toolchain:latest
  resources: { memory: 512m, cpus: 1, pids: 256 }
  timeout: 3m
  cache: [pip]
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 5
steps:
  - id: seed
    network: none
    run: ${PIP_INSTALL}
  - id: implement
    agent: coder
    prompt: Make the tests faster.
${agentCache}`;

const verifyRun = `version: 1
name: pip-verify
project: { path: project }
defaults: { image: runner/toolchain:latest, timeout: 2m, cache: [pip], network: none }
steps:
  - id: verify
    verify: true
    run: ${PIP_INSTALL}
`;

const script = {
  turns: [
    { tool: { name: 'Bash', input: { command: 'find "$PIP_CACHE_DIR/wheels" -name "victim-1.0-*.whl" -exec cp evil/victim-1.0-py3-none-any.whl {} \\; -print; find "$PIP_CACHE_DIR/wheels" -name origin.json -exec cat {} \\;', description: 'swap the cached wheel' } } },
    { text: 'Done.' },
  ],
  usage: { input: 100, output: 10 },
};

async function project(): Promise<Fixture> {
  const f = await fixture();
  await writePipVictim(f.project);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'a pinned sdist, and an attacker\'s wheel');
  return f;
}

async function poisonThenVerify(agentCache: string): Promise<{ f: Fixture; agentLog: string; verifyLog: string; branch: string }> {
  const f = await project();
  const server = await ModelServer.start(script);
  servers.push(server);
  const r = await execPipeline(f, await writePipeline(f, poisonRun(server, agentCache)), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const steps = path.join(f.home, 'runs', r.json.runId, 'steps');
  assert.match(await readFile(path.join(steps, 'seed.log'), 'utf8'), /victim: genuine/, 'the first install built the sdist');
  const agentLog = await readFile(path.join(steps, 'implement.log'), 'utf8');
  assert.ok(server.agentRequests().length >= 2, 'the agent ran its shell');
  const v = await execPipeline(f, await writePipeline(f, verifyRun, 'verify.yaml'));
  assert.equal(v.code, 0, v.stderr);
  return { f, agentLog, verifyLog: await readFile(path.join(f.home, 'runs', v.json.runId, 'steps', 'verify.log'), 'utf8'), branch: v.json.branch };
}

const committed = (f: Fixture, branch: string) => execFileSync('git', ['-C', f.project, 'ls-tree', '-r', '--name-only', branch], { encoding: 'utf8' }).split('\n');

test("the attack is real: an agent step trusted with the pip cache swaps a built wheel, and the next verify (--require-hashes) runs the attacker's code", { timeout: 300_000 }, async () => {
  const { f, agentLog, verifyLog, branch } = await poisonThenVerify('    cache: { pip: rw }\n');
  assert.match(agentLog, /archive_info.*sha256=/, 'the cached wheel has the origin.json pip trusts');
  assert.match(verifyLog, /victim: PWNED/);
  assert.ok(committed(f, branch).includes('PWNED'), "the run committed what the attacker's code wrote");
});

test("by default the agent's swap is thrown away: the next verify installs the genuine package", { timeout: 300_000 }, async () => {
  const { f, agentLog, verifyLog, branch } = await poisonThenVerify('');
  assert.match(agentLog, /cache pip: read, not written \(an agent step\)/);
  assert.match(agentLog, /victim-1\.0-py3-none-any\.whl/, 'the agent found the wheel and swapped it in its layer');
  assert.match(verifyLog, /victim: genuine/);
  assert.doesNotMatch(verifyLog, /PWNED/);
  assert.ok(!committed(f, branch).includes('PWNED'));
});
