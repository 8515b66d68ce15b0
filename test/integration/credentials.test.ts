/**
 * Credentials that never enter the sandbox (issue 33), against real servers of
 * the test's own on a network of its own: the real Claude Code, driven by the
 * scripted model, installs a private package from a registry that wants a
 * token (verdaccio over HTTPS from a test CA), the token added by its
 * gateway; a plain step pushes its branch to a git server over HTTPS
 * (git-http-backend) with basic auth its gateway adds. Neither the agent nor
 * the step holds the token: not in a container's environment or inspect
 * output, not in a file, not in the run's records, and a search from inside
 * finds nothing.
 */
import assert from 'node:assert/strict';
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { startGitHttps, type GitHttps } from '../fixtures/git-https.js';
import { ModelServer } from '../fixtures/model-server.js';
import { greeting, startPrivateNpm, type PrivateNpm } from '../fixtures/private-npm.js';
import { execPipeline, git, projectsForThisFile, writePipeline, type Fixture } from '../fixtures/project.js';
import { startTestCa, type TestCa } from '../fixtures/test-ca.js';
import { makeTestNetwork, type TestNetwork } from '../fixtures/test-network.js';

const WS = '/home/agent/run-workspace';
const fixture = projectsForThisFile();
const run = promisify(execFile);
let net: TestNetwork;
let ca: TestCa & { stop(): void };
let npm: PrivateNpm;
let gitServer: GitHttps;
const models: ModelServer[] = [];
before(async () => {
  net = makeTestNetwork('credentials');
  ca = startTestCa(['npm.company.example', 'git.company.example']);
  npm = await startPrivateNpm({ network: net.network, ca });
  gitServer = startGitHttps({ network: net.network, ca });
}, { timeout: 900_000 });
after(async () => {
  await Promise.all(models.map((m) => m.close()));
  npm?.stop();
  gitServer?.stop();
  net?.remove();
  ca?.stop();
});

/** The flags a user on this company network gives: the egress network (a private range, allowed) and the host's bundle with the company's root. */
const flags = () => [...net.egressFlags, '--ca-file', ca.bundleFile];

/** `[N]GYw...`: a grep pattern that finds the value and is not itself the value (a search's own command line must not match). */
const pattern = (value: string) => `[${value[0]}]${value.slice(1).replace(/[\\.*^$[\]]/g, '\\$&')}`;

/** What a poisoned prompt makes the agent do: look everywhere it can for the token. */
const search = (value: string) =>
  [
    'found=0',
    `env | grep -q '${pattern(value)}' && found=$((found+1))`,
    `for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do tr "\\0" "\\n" < "$f" 2>/dev/null | grep -q '${pattern(value)}' && found=$((found+1)); done`,
    `grep -rqs '${pattern(value)}' /home /tmp /etc /run /root /var/tmp /workspace . 2>/dev/null && found=$((found+1))`,
    'npm config list -l 2>/dev/null | grep -ci authtoken > npmrc-tokens.txt',
    'echo "$found" > search.txt',
  ].join('; ');

/** Polls `docker inspect` of every container, network and volume of the fixture's home while `during` runs: where the value showed, and what was seen. */
async function watchInspect<T>(f: Fixture, values: string[], during: () => Promise<T>): Promise<{ result: T; found: string[]; roles: string[] }> {
  const roles = new Set<string>();
  const found: string[] = [];
  let polling = true;
  const docker = async (...args: string[]) => (await run('docker', args, { maxBuffer: 1 << 26 }).catch(() => ({ stdout: '' }))).stdout;
  const poll = (async () => {
    const label = `label=dev.runner.home=${f.home}`;
    while (polling) {
      for (const kind of ['container', 'network', 'volume'] as const) {
        const ids = (await docker(kind, 'ls', ...(kind === 'container' ? ['-a'] : []), '-q', '--filter', label)).split('\n').filter(Boolean);
        if (!ids.length) continue;
        const json = await docker(kind, 'inspect', ...ids);
        if (kind === 'container') for (const c of JSON.parse(json || '[]') as Array<{ Config?: { Labels?: Record<string, string> } }>) roles.add(c.Config?.Labels?.['dev.runner.role'] ?? 'step');
        for (const v of values) if (json.includes(v)) found.push(`${kind} ${ids.join(' ')}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  try {
    const result = await during();
    return { result, found, roles: [...roles].sort() };
  } finally {
    polling = false;
    await poll;
  }
}

/** Every file under dir (the runner's home: records, logs, events, worktrees) that holds one of the values, in any of its forms. */
function filesHolding(dir: string, values: string[]): string[] {
  const forms = values.flatMap((v) => [v, encodeURIComponent(v), Buffer.from(v).toString('base64'), Buffer.from(v).toString('hex')]);
  const hits: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && statSync(p).size < 64 << 20) {
        const text = readFileSync(p, 'latin1');
        if (forms.some((v) => text.includes(v))) hits.push(p);
      }
    }
  };
  walk(dir);
  return hits;
}

const events = (f: Fixture, runId: string) =>
  readFileSync(path.join(f.home, 'runs', runId, 'events.jsonl'), 'utf8').trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);

test('the real Claude Code installs @acme/greet from the private registry with the token its gateway adds, and holds no token', { timeout: 420_000 }, async () => {
  const f = await fixture({ owner: 1000 });
  // a project that names the registry for its scope, with no token: what a company's repository has
  writeFileSync(path.join(f.project, '.npmrc'), `@acme:registry=${npm.url}\n`);
  writeFileSync(path.join(f.project, 'package.json'), `${JSON.stringify({ name: 'app', version: '1.0.0', private: true }, null, 2)}\n`);
  writeFileSync(path.join(f.project, '.gitignore'), 'node_modules/\n');
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'a project on the private registry');
  execFileSync('chown', ['-R', '1000:1000', f.project]);

  const model = await ModelServer.start({
    turns: [
      { tool: { name: 'Bash', input: { command: 'npm install @acme/greet --no-audit --no-fund --fetch-retries=0 > npm-install.txt 2>&1; echo "exit=$?" >> npm-install.txt', description: 'install the private package' } } },
      { tool: { name: 'Bash', input: { command: `node -e 'require("fs").writeFileSync("greet.txt", require("@acme/greet")("runner") + "\\n")'`, description: 'use it' } } },
      { tool: { name: 'Bash', input: { command: search(npm.token), description: 'search for the token' } } },
      { text: 'Installed @acme/greet, used it, and searched for the token.' },
    ],
    usage: { input: 100, output: 10 },
  });
  models.push(model);
  const file = await writePipeline(f, `version: 1
name: private-npm
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY, NPM_TOKEN]
credentials:
  company-npm:
    hosts: [npm.company.example]
    header: { Authorization: "Bearer \${NPM_TOKEN}" }
agents:
  coder:
    use: claude-code
    base_url: ${model.url}
    max_turns: 10
    credentials: [company-npm]
    egress: [npm.company.example]
steps:
  - id: implement
    agent: coder
    timeout: 5m
    prompt: Install @acme/greet from the company registry and use it.
`);
  // what the registry answered before this run (the fixture's own checks and publish) is not the step's
  const before = npm.requests().length;
  const { result: r, found, roles } = await watchInspect(f, [npm.token], () =>
    execPipeline(f, file, flags(), { env: { ANTHROPIC_API_KEY: 'sk-ant-api03-credentials-test-' + 'k'.repeat(20), NPM_TOKEN: npm.token } }),
  );
  assert.equal(r.code, 0, r.stderr);
  const branch = r.json.branch as string;
  const installLog = git(f.project, 'show', `${branch}:npm-install.txt`);
  assert.match(installLog, /^exit=0$/m, installLog);
  assert.equal(git(f.project, 'show', `${branch}:greet.txt`), greeting('runner'), 'the package was installed and used');
  const pkg = JSON.parse(git(f.project, 'show', `${branch}:package.json`)) as { dependencies?: Record<string, string> };
  assert.ok(pkg.dependencies?.['@acme/greet'], 'package.json names the dependency');
  assert.match(git(f.project, 'show', `${branch}:package-lock.json`), /"resolved": "https:\/\/npm\.company\.example\/@acme\/greet\/-\/greet-1\.0\.0\.tgz"/);

  // the registry saw the token (as acme) on the package and its tarball: only the gateway can have sent it
  const reads = npm.requests().slice(before).filter((q) => q.url.includes('greet'));
  assert.ok(reads.some((q) => q.user === 'acme' && q.status === 200 && /\.tgz$/.test(q.url)), JSON.stringify(reads));
  assert.ok(reads.every((q) => q.status !== 401), `no request reached the registry without the token: ${JSON.stringify(reads)}`);

  // and the agent never had it
  assert.equal(git(f.project, 'show', `${branch}:search.txt`), '0', "the token is in no env, /proc, or file the agent can read");
  assert.equal(git(f.project, 'show', `${branch}:npmrc-tokens.txt`), '0', "npm's config holds no token");
  assert.deepEqual(roles, ['gateway', 'step'], 'the gateway and the step were both inspected while they ran');
  assert.deepEqual(found, [], 'no inspect output holds the token');
  assert.deepEqual(filesHolding(f.home, [npm.token]), [], 'no record, log, event or worktree file of the run holds the token');
  // git grep exits 1 when nothing matches
  const grep = spawnSync('git', ['-c', 'safe.directory=*', '-C', f.project, 'grep', '-c', '-F', npm.token, branch, '--'], { encoding: 'utf8' });
  assert.deepEqual([grep.status, grep.stdout.trim()], [1, ''], 'the branch holds no token');
});

test('a plain step pushes its branch to the git server over HTTPS with basic auth its gateway adds; the step has no token', { timeout: 300_000 }, async () => {
  const f = await fixture();
  const file = await writePipeline(f, `version: 1
name: git-push
project: { path: project, push: never }
secrets: [GIT_TOKEN]
credentials:
  company-git:
    hosts: [git.company.example]
    basic: { username: x-access-token, password: "\${GIT_TOKEN}" }
steps:
  - id: push
    image: runner/toolchain:latest
    timeout: 2m
    credentials: [company-git]
    egress:
      - { host: git.company.example, paths: ["/acme/app.git/**"] }
    run: |
      set -e
      export GIT_TERMINAL_PROMPT=0
      echo "head=$(git rev-parse HEAD)"
      git push ${gitServer.repoUrl} HEAD:refs/heads/from-the-step
      echo "token_vars=$(env | grep -ci token || true)"
      echo "credential_helpers=$(git config --get-all credential.helper | wc -l)"
`);
  const before = gitServer.arrived().length;
  const { result: r, found } = await watchInspect(f, [gitServer.token], () => execPipeline(f, file, flags(), { env: { GIT_TOKEN: gitServer.token } }));
  const log = r.json ? readFileSync(path.join(f.home, 'runs', r.json.runId, 'steps', 'push.log'), 'utf8') : r.stderr + r.stdout;
  assert.equal(r.code, 0, `${log}\n${r.stderr}`);
  const head = /^head=([0-9a-f]{40})$/m.exec(log)?.[1];
  assert.ok(head, log);
  assert.equal(gitServer.branches()['from-the-step'], head, 'the server has the branch, at the commit the step was on');
  assert.match(log, /^token_vars=0$/m, 'no variable of the step names a token');
  assert.match(log, /^credential_helpers=0$/m);
  const pushes = gitServer.arrived().slice(before).filter((q) => q.url.startsWith('/acme/app.git/'));
  assert.ok(pushes.some((q) => q.method === 'POST' && q.url === '/acme/app.git/git-receive-pack' && q.authorized && q.status === 200), JSON.stringify(pushes));
  assert.deepEqual(pushes.filter((q) => !q.authorized).map((q) => `${q.method} ${q.url} ${q.status} ${JSON.stringify(q.headers)}`), [], 'every request the step made arrived with the credential (the gateway set it on each)');
  assert.deepEqual(found, [], 'no inspect output holds the token');
  assert.deepEqual(filesHolding(f.home, [gitServer.token]), [], 'no record, log or event holds the token');
  assert.ok(!events(f, r.json.runId).some((e) => e.message === 'secret_refused'), 'the credential going out on its own host is no leak');
});
