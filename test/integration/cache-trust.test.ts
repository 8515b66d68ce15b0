/**
 * Who writes a project's caches, played for real (safety promise 15): an agent step (the real Claude Code, its
 * shell driven by the scripted model) plants files in the project's npm cache, and so does the verify step that
 * runs after it (as a poisoned test or install script would); the next run's steps find neither, while what a
 * step before any agent step wrote is there for them. The first run's log says which steps only read the cache.
 * A step the file trusts outright (`{ npm: rw }`) writes it even after an agent step.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { execPipeline, projectsForThisFile, writePipeline } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
const KEY = 'sk-ant-api03-scripted-cache-trust-0000000';

const pipeline = (server: ModelServer, verifyCache = '') => `version: 1
name: cache-trust
project: { path: project }
secrets: [ANTHROPIC_API_KEY]
defaults:
  image: runner/toolchain:latest
  resources: { memory: 512m, cpus: 1, pids: 256 }
  timeout: 2m
  cache: [npm]
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 5
steps:
  - id: seed
    run: echo seeded-before-any-agent > "$npm_config_cache/seeded"
  - id: implement
    agent: coder
    prompt: Plant something in the npm cache.
  - id: verify
    verify: true
${verifyCache}    run: |
      echo planted-by-verify > "$npm_config_cache/planted-by-verify"
      ls -a "$npm_config_cache"
`;

const script = {
  turns: [
    { tool: { name: 'Bash', input: { command: 'echo planted-by-agent > "$npm_config_cache/planted-by-agent"; ls "$npm_config_cache"', description: 'plant' } } },
    { text: 'Planted.' },
  ],
  usage: { input: 100, output: 10 },
};

async function cacheFiles(home: string): Promise<string[]> {
  const root = path.join(home, 'caches');
  const [project] = (await readdir(root)).filter((k) => k.startsWith('project-'));
  return (await readdir(path.join(root, project!, 'npm', 'data'))).sort();
}

test("an agent step, and a verify step after it, only read the project's cache: what they plant is thrown away; a step before any agent writes it", { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(script);
  servers.push(server);
  const r = await execPipeline(f, await writePipeline(f, pipeline(server)), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  const runDir = path.join(f.home, 'runs', r.json.runId, 'steps');
  const log = (id: string) => readFile(path.join(runDir, `${id}.log`), 'utf8');
  // the agent's shell wrote in what it saw as the cache, and the verify did: neither reached the cache itself
  assert.match(await log('implement'), /cache npm: read, not written \(an agent step\)/);
  assert.match(await log('verify'), /cache npm: read, not written \(it runs after agent step implement, whose work it may run\)/);
  assert.match(await log('verify'), /planted-by-verify/, 'the verify wrote in its layer');
  assert.doesNotMatch(await log('seed'), /read, not written/);
  assert.deepEqual(await cacheFiles(f.home), ['seeded'], 'only what the step before any agent wrote is kept');
  assert.ok(server.agentRequests().length >= 2, 'the agent ran its shell');

  // the next run's first step reads what was kept, and nothing planted
  const next = await execPipeline(
    f,
    await writePipeline(f, `version: 1
name: cache-read
project: { path: project }
defaults: { image: runner/toolchain:latest, timeout: 1m, cache: [npm] }
steps:
  - id: look
    run: ls -a "$npm_config_cache"; cat "$npm_config_cache"/planted-* 2>/dev/null || echo nothing-planted
`, 'next.yaml'),
  );
  assert.equal(next.code, 0, next.stderr);
  assert.match(next.stderr, /seeded/);
  assert.match(next.stderr, /nothing-planted/);
});

test('a step whose file says { npm: rw } writes the cache even after an agent step', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const server = await ModelServer.start(script);
  servers.push(server);
  const r = await execPipeline(f, await writePipeline(f, pipeline(server, '    cache: { npm: rw }\n')), [], { env: { ANTHROPIC_API_KEY: KEY } });
  assert.equal(r.code, 0, r.stderr);
  assert.doesNotMatch(await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', 'verify.log'), 'utf8'), /read, not written/);
  assert.deepEqual(await cacheFiles(f.home), ['planted-by-verify', 'seeded'], "the trusted step's write is kept; the agent's is not");
});

test('in a persistent directory no step writes the caches: what earlier runs\' agents left there, or an agent beside it writes, it may run', { timeout: 240_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  const dir = path.join(f.root, 'content');
  await mkdir(dir);
  await writeFile(path.join(dir, 'notes.txt'), 'notes\n');
  execFileSync('chown', ['-R', '1000:1000', dir]);
  const server = await ModelServer.start({ turns: [{ text: 'Nothing to do.' }], usage: { input: 10, output: 5 } });
  servers.push(server);
  const r = await execPipeline(
    f,
    await writePipeline(
      f,
      `version: 1
name: beside
project: { path: ${dir}, workspace: persistent_directory }
secrets: [ANTHROPIC_API_KEY]
shared_workspace: true
max_parallel: 2
defaults: { image: runner/toolchain:latest, timeout: 2m, cache: [npm], resources: { memory: 512m, cpus: 1, pids: 256 } }
agents:
  coder: { use: claude-code, base_url: ${server.url}, max_turns: 2 }
steps:
  - id: first
    run: echo before-any-agent > "$npm_config_cache/first"
  - id: install
    needs: [first]
    run: echo beside-the-agent > "$npm_config_cache/beside"
  - id: implement
    needs: [first]
    agent: coder
    prompt: Look around.
`,
      'beside.yaml',
    ),
    [],
    { env: { ANTHROPIC_API_KEY: KEY } },
  );
  assert.equal(r.code, 0, r.stderr);
  for (const step of ['first', 'install']) {
    const log = await readFile(path.join(f.home, 'runs', r.json.runId, 'steps', `${step}.log`), 'utf8');
    assert.match(log, /cache npm: read, not written \(it works in the persistent directory \/.*\/content, which holds what earlier runs left, their agents' work among them\)/, step);
  }
  const root = path.join(f.home, 'caches');
  const kept = await Promise.all((await readdir(root)).map((k) => readdir(path.join(root, k, 'npm', 'data')).catch(() => [] as string[])));
  assert.deepEqual(kept.flat().sort(), [], 'nothing of the directory\'s steps is kept');
});
