/**
 * The installed tree and a persistent directory, played with the real npm and the real Claude Code (the scripted
 * model): a run's agent rewrites the project's test in the directory (it is not committed: the directory is the
 * project, edited in place); the next run's first step, before any agent, runs `npm ci && npm test`, and the test
 * it runs is the agent's, which rewrites a dependency in node_modules after npm installed it. npm's own record of
 * the tree (node_modules/.package-lock.json), the lockfile and package.json are all as npm left them, so the tree
 * would be kept under the key of the project's committed lockfile, and a later run on a clean worktree of the
 * project's commits would be handed the agent's code. A persistent directory keeps no tree.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { ModelServer } from '../fixtures/model-server.js';
import { execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const servers: ModelServer[] = [];
after(() => Promise.all(servers.map((s) => s.close())));
const KEY = 'sk-ant-api03-scripted-tree-persistent-0000';

/** The project: one dependency from a tarball in vendor/ (no network), a lockfile, and a test that only reads it. */
async function nodeProject(f: Fixture): Promise<void> {
  const src = path.join(f.root, 'dep-src');
  await mkdir(src, { recursive: true });
  await writeFile(path.join(src, 'package.json'), JSON.stringify({ name: 'stamped-dep', version: '1.0.0' }));
  await writeFile(path.join(src, 'index.js'), 'module.exports = "honest";\n');
  await mkdir(path.join(f.project, 'vendor'), { recursive: true });
  const tgz = execFileSync('npm', ['pack', '--silent', '--pack-destination', path.join(f.project, 'vendor')], { cwd: src, encoding: 'utf8' }).trim();
  await writeFile(
    path.join(f.project, 'package.json'),
    `${JSON.stringify({ name: 'tree-project', version: '1.0.0', private: true, scripts: { test: 'node test.js' }, dependencies: { 'stamped-dep': `file:vendor/${tgz}` } }, null, 2)}\n`,
  );
  await writeFile(path.join(f.project, 'test.js'), 'console.log("test sees", require("stamped-dep"));\n');
  await writeFile(path.join(f.project, '.gitignore'), 'node_modules/\n');
  execFileSync('npm', ['install', '--package-lock-only', '--ignore-scripts', '--no-audit', '--no-fund', '--offline'], { cwd: f.project, stdio: 'ignore' });
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'a node project');
  execFileSync('chown', ['-R', '1000:1000', f.project]);
}

/** the agent's command: the project's test, rewritten to plant code in the installed dependency */
const REWRITE = `printf '%s\\n' 'require("fs").writeFileSync("node_modules/stamped-dep/index.js", "module.exports = \\"planted\\";\\n"); console.log("test ran");' > /home/agent/run-workspace/test.js && cat /home/agent/run-workspace/test.js`;

const defaults = 'defaults: { image: runner/toolchain:latest, network: none, timeout: 2m, cache: [npm], resources: { memory: 1g, cpus: 1, pids: 256 } }';

test("a persistent directory keeps no installed tree: npm ci there runs what an earlier run's agent left, which can rewrite node_modules", { timeout: 300_000 }, async () => {
  const f = await fixture();
  await nodeProject(f);
  const server = await ModelServer.start({ turns: [{ tool: { name: 'Bash', input: { command: REWRITE, description: 'rewrite the test' } } }, { text: 'Done.' }], usage: { input: 100, output: 10 } });
  servers.push(server);

  const agentRun = await execPipeline(
    f,
    await writePipeline(
      f,
      `version: 1
name: edit-in-place
project: { path: ${f.project}, workspace: persistent_directory }
secrets: [ANTHROPIC_API_KEY]
defaults: { image: runner/toolchain:latest, timeout: 2m, resources: { memory: 512m, cpus: 1, pids: 256 } }
agents:
  coder: { use: claude-code, base_url: ${server.url}, max_turns: 4 }
steps:
  - id: implement
    agent: coder
    prompt: Improve the test.
`,
      'agent.yaml',
    ),
    [],
    { env: { ANTHROPIC_API_KEY: KEY } },
  );
  assert.equal(agentRun.code, 0, agentRun.stderr);
  assert.match(await readFile(path.join(f.project, 'test.js'), 'utf8'), /planted/, "the agent's test is in the directory");

  // the next run of the directory: its first step, before any agent, installs and runs the tests
  const next = await execPipeline(
    f,
    await writePipeline(
      f,
      `version: 1
name: test-in-place
project: { path: ${f.project}, workspace: persistent_directory }
${defaults}
steps:
  - id: verify
    run: npm ci --no-audit --no-fund && npm test
`,
      'next.yaml',
    ),
  );
  assert.equal(next.code, 0, next.stderr);
  const root = path.join(f.home, 'caches');
  const treesAfterNext = (await Promise.all((await readdir(root)).map((k) => readdir(path.join(root, k, 'npm', 'trees')).catch(() => [] as string[])))).flat().filter((n) => !n.startsWith('.'));
  // a run on a clean worktree of the project's commits installs its own: the agent's code is not handed to it
  const clean = await execPipeline(
    f,
    await writePipeline(
      f,
      `version: 1
name: clean
project: { path: project }
${defaults}
steps:
  - id: verify
    run: npm ci --no-audit --no-fund && npm test
`,
      'clean.yaml',
    ),
  );
  assert.equal(clean.code, 0, clean.stderr);
  const cleanLog = await readFile(path.join(f.home, 'runs', clean.json.runId, 'steps', 'verify.log'), 'utf8');
  assert.doesNotMatch(cleanLog, /restored from the installed-tree cache/);
  assert.match(cleanLog, /test sees honest/);
  const nextLog = await readFile(path.join(f.home, 'runs', next.json.runId, 'steps', 'verify.log'), 'utf8');
  assert.match(nextLog, /test ran/, "the agent's test ran after the install");
  assert.doesNotMatch(nextLog, /kept the installed tree/);
  assert.match(nextLog, /cache npm: read, not written \(it works in the persistent directory /, 'no step of a persistent directory writes the caches, its trees among them (keep.ts refuses one too, for a step the file trusts with { npm: rw })');
  assert.deepEqual(treesAfterNext, [], 'no tree kept from the persistent directory');
});
