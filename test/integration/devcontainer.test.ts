/**
 * image: devcontainer, with the real engine: a fixture project of our own whose .devcontainer builds FROM our base
 * image (already on the engine: nothing is pulled), adds a tool of its own, installs a local feature and leaves a
 * marker from its postCreateCommand. A run's step uses all of it; the second run prepares nothing; a changed
 * devcontainer.json prepares again; refused keys are refused by `runner validate` with their line.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { cp, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { startFakeInternet, type FakeInternet } from '../fixtures/fake-internet.js';
import { ModelServer } from '../fixtures/model-server.js';
import { execPipeline, git, projectsForThisFile, runCli, treeHash, writePipeline, type Fixture } from '../fixtures/project.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/devcontainer-project/.devcontainer');
const fixture = projectsForThisFile();
const made = new Set<string>();

after(() => {
  // the images these tests prepared (each run of the file has its own, by its nonce), and their intermediate tags
  for (const image of made) {
    for (const tag of [image, `${image}-build`, `${image}-features`]) {
      try {
        execFileSync('docker', ['image', 'rm', '-f', tag], { stdio: 'ignore' });
      } catch {
        // not made
      }
    }
  }
});

const PIPELINE = `version: 1
name: devcontainer
project: { path: project }
defaults:
  image: devcontainer
  resources: { memory: 512m, cpus: 1, pids: 256 }
  timeout: 2m
steps:
  - id: use
    run: |
      dc-hello
      echo "greeting=$(cat /etc/dc-greeting)"
      echo "marker=$(cat /opt/dc-marker)"
      echo "readme=$(cat /opt/dc-readme-seen)"
      echo "feature=$(cat /etc/dc-feature) stamp=$STAMP_HOME"
      echo "mode=$DC_MODE ws=$DC_WS remote=$DC_REMOTE pwd=$(pwd)"
      test ! -e left-by-postcreate && echo "workspace clean"
      echo "home=$HOME cache=$(cat "$HOME/.cache/dc/state")"
      echo again >> "$HOME/.cache/dc/state" && touch "$HOME/.step-wrote" && echo "home writable by $(id -u)"
`;

async function devcontainerProject(): Promise<{ f: Fixture; nonce: string }> {
  const f = await fixture({ owner: 1000 });
  const nonce = randomBytes(6).toString('hex');
  const dir = path.join(f.project, '.devcontainer');
  await cp(FIXTURE, dir, { recursive: true });
  const file = path.join(dir, 'devcontainer.json');
  await writeFile(file, (await readFile(file, 'utf8')).replace('@NONCE@', nonce));
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=t', '-c', 'user.email=t@localhost', 'commit', '-q', '-m', 'dev container');
  execFileSync('chown', ['-R', '1000:1000', f.project]);
  return { f, nonce };
}

async function devcontainerEvents(f: Fixture, runId: string): Promise<Array<{ image: string; prepared: boolean; warnings: string[] }>> {
  const text = await readFile(path.join(f.home, 'runs', runId, 'events.jsonl'), 'utf8');
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { message: string; image: string; prepared: boolean; warnings: string[] })
    .filter((e) => e.message === 'devcontainer');
}

test("a step runs in the project's dev container: its tool, its build args, its feature, its postCreateCommand's marker and its env; the second run prepares nothing; a change prepares again", async () => {
  const { f } = await devcontainerProject();
  const before = await treeHash(f.project);
  const file = await writePipeline(f, PIPELINE);

  const first = await execPipeline(f, file);
  assert.equal(first.code, 0, first.stderr);
  const out = first.stderr;
  assert.match(out, /dev container: preparing image runner-devcontainer:/);
  assert.match(out, /dev container build: /, 'the build is shown as it goes');
  assert.match(out, /▶ postCreateCommand/, "the preparing commands' output is shown");
  assert.match(out, /dc-hello: the dev container's own tool/);
  assert.match(out, /greeting=hello-from-build/);
  assert.match(out, /marker=made-by-postcreate/);
  assert.match(out, /readme=# fixture/, 'the preparing commands see the project at the workspace');
  assert.match(out, /feature=featured by root stamp=\/opt\/stamp/);
  assert.match(out, /mode=fixture ws=\/home\/agent\/run-workspace remote=fixture-remote pwd=\/home\/agent\/run-workspace/);
  assert.match(out, /workspace clean/, 'what the preparing commands wrote in the workspace stays out of the run');
  // the base image has no /home/agent, and the preparing commands ran as root: the step (uid 1000) has its HOME, and what they left there
  assert.match(out, /home=\/home\/agent cache=warmed/);
  assert.match(out, /home writable by 1000/);
  assert.match(out, /warning: dev container: .*postStartCommand: ignored/);
  assert.match(out, /warning: dev container: .*workspaceFolder \/workspaces\/fixture is not where the workspace is/);
  assert.equal(await treeHash(f.project), before, 'the project is not written');
  const [ev1] = await devcontainerEvents(f, first.json.runId);
  assert.equal(ev1?.prepared, true);
  made.add(ev1!.image);
  assert.match(ev1!.image, /^runner-devcontainer:[0-9a-f]{24}$/);
  const names = execFileSync('docker', ['images', '--format', '{{.Repository}}:{{.Tag}}', 'runner-devcontainer'], { encoding: 'utf8' });
  assert.ok(names.split('\n').includes(ev1!.image), names);
  assert.ok(!names.includes(`${ev1!.image}-`), `the intermediate names are gone: ${names}`);
  assert.equal(execFileSync('docker', ['ps', '-a', '-q', '--filter', `label=dev.runner.devcontainer`, '--filter', 'name=runner-devcontainer-prepare'], { encoding: 'utf8' }).trim(), '', 'the preparing container is gone');

  const second = await execPipeline(f, file);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stderr, /was prepared before for this configuration: nothing to prepare/);
  assert.doesNotMatch(second.stderr, /dev container build: |▶ postCreateCommand/);
  assert.match(second.stderr, /marker=made-by-postcreate/);
  const [ev2] = await devcontainerEvents(f, second.json.runId);
  assert.deepEqual({ image: ev2?.image, prepared: ev2?.prepared }, { image: ev1!.image, prepared: false });

  // a changed devcontainer.json is another image
  const dc = path.join(f.project, '.devcontainer/devcontainer.json');
  await writeFile(dc, (await readFile(dc, 'utf8')).replace('"DC_MODE": "fixture"', '"DC_MODE": "changed"'));
  const third = await execPipeline(f, file);
  assert.equal(third.code, 0, third.stderr);
  assert.match(third.stderr, /dev container: preparing image/);
  assert.match(third.stderr, /mode=changed /);
  const [ev3] = await devcontainerEvents(f, third.json.runId);
  assert.equal(ev3?.prepared, true);
  made.add(ev3!.image);
  assert.notEqual(ev3!.image, ev1!.image);

  // a change to a file the Dockerfile copies is another image too; a file it does not copy is not
  await writeFile(path.join(f.project, 'unrelated.txt'), 'x\n');
  const fourth = await execPipeline(f, file);
  assert.match(fourth.stderr, /nothing to prepare/);
  await writeFile(path.join(f.project, '.devcontainer/tools/dc-hello'), '#!/bin/sh\necho "dc-hello v2"\n');
  const fifth = await execPipeline(f, file);
  assert.equal(fifth.code, 0, fifth.stderr);
  assert.match(fifth.stderr, /dev container: preparing image/);
  assert.match(fifth.stderr, /dc-hello v2/);
  const [ev5] = await devcontainerEvents(f, fifth.json.runId);
  made.add(ev5!.image);
});

test('runner validate refuses what the dev container may not have, each with its line; registry features by name', async () => {
  const { f } = await devcontainerProject();
  const dc = path.join(f.project, '.devcontainer/devcontainer.json');
  await writeFile(
    dc,
    ['{', '  "image": "runner/base:latest",', '  "runArgs": ["--privileged"],', '  "mounts": ["source=/,target=/host,type=bind"],', '  "initializeCommand": "id",', '  "features": { "ghcr.io/devcontainers/features/node:1": {} }', '}'].join('\n'),
  );
  const file = await writePipeline(f, PIPELINE);
  const r = await runCli(['validate', file]);
  assert.equal(r.code, 2, r.stdout + r.stderr);
  assert.match(r.stderr, /devcontainer\.json:3:3 runArgs: refused: /);
  assert.doesNotMatch(r.stderr, /mounts: refused/, 'a host mount is ignored with a warning, never honoured');
  assert.match(r.stderr, /devcontainer\.json:5:3 initializeCommand: refused: initializeCommand runs on the host/);
  assert.match(r.stderr, /devcontainer\.json:6:17 features\.ghcr\.io\/devcontainers\/features\/node:1: refused: feature ghcr\.io\/devcontainers\/features\/node:1 is not a folder of the project/);

  // and a run refuses it before anything starts
  const run = await execPipeline(f, file);
  assert.notEqual(run.code, 0);
  assert.match(run.stderr, /runArgs: refused/);
  assert.deepEqual(await readdir(path.join(f.home, 'runs')).catch(() => []), []);
});

test('a preparation that fails says what the file asked that was ignored, and keeps nothing', async () => {
  const { f } = await devcontainerProject();
  const dc = path.join(f.project, '.devcontainer/devcontainer.json');
  await writeFile(dc, ['{', '  "image": "runner/base:latest",', '  "forwardPorts": [3000],', '  "containerEnv": { "DC_NONCE": "' + randomBytes(6).toString('hex') + '" },', '  "postCreateCommand": "echo preparing-fails; exit 7"', '}'].join('\n'));
  const r = await execPipeline(f, await writePipeline(f, PIPELINE));
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /warning: dev container: .*devcontainer\.json:3:3 forwardPorts: ignored: a step publishes no port/);
  assert.match(r.stderr, /preparing commands exited 1: nothing was kept[\s\S]*preparing-fails/);
  const image = /preparing image (runner-devcontainer:[0-9a-f]{24})/.exec(r.stderr)?.[1];
  assert.ok(image, r.stderr);
  const left = execFileSync('docker', ['images', '--format', '{{.Repository}}:{{.Tag}}', 'runner-devcontainer'], { encoding: 'utf8' }).split('\n').filter((n) => n.startsWith(image));
  assert.deepEqual(left, [], 'nor an intermediate name');
});

test('a base image neither on the engine nor pulled is said with where the file names it and what to do, before anything is prepared', async () => {
  const { f } = await devcontainerProject();
  const dc = path.join(f.project, '.devcontainer/devcontainer.json');
  // a registry on this machine's loopback that nothing listens on: the pull is refused at once, and goes nowhere else
  await writeFile(dc, '{ "image": "127.0.0.1:9/runner-test/none-such:1" }');
  const r = await execPipeline(f, await writePipeline(f, PIPELINE));
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /the dev container's base image 127\.0\.0\.1:9\/runner-test\/none-such:1 \("image" in \.devcontainer\/devcontainer\.json\): image .* could not be pulled .*; or name there a copy of it in a registry this machine reaches/);
  assert.doesNotMatch(r.stderr, /preparing commands|    at /, 'no preparation, no stack');
});

test("the preparing commands reach the hosts the step's egress: allows, through a gateway of their own, and no other; the proxy is not kept in the image", { timeout: 240_000 }, async () => {
  const net: FakeInternet = startFakeInternet(['allowed.example', 'denied.example']);
  try {
    const { f } = await devcontainerProject();
    const dc = path.join(f.project, '.devcontainer/devcontainer.json');
    const fetch =
      'set +e; (curl -s -m 10 http://allowed.example/ || echo no-answer) > /opt/dc-allowed; curl -s -m 10 -o /dev/null -w "%{http_code}" http://denied.example/ > /opt/dc-denied; echo made-by-postcreate > /opt/dc-marker; echo "$(sha256sum < "$SSL_CERT_FILE" | cut -c1-64) $NODE_EXTRA_CA_CERTS" > /opt/dc-ca';
    await writeFile(dc, (await readFile(dc, 'utf8')).replace(/"postCreateCommand": "[^"]*"/, `"postCreateCommand": ${JSON.stringify(fetch)}`));
    // curl is in our toolchain image, not in the base
    const dockerfile = path.join(f.project, '.devcontainer/Dockerfile');
    await writeFile(dockerfile, (await readFile(dockerfile, 'utf8')).replace('FROM runner/base:latest', 'FROM runner/toolchain:latest'));
    const file = await writePipeline(
      f,
      PIPELINE.replace('  timeout: 2m\n', '  timeout: 2m\n  egress: [allowed.example]\n').replace(/    run: \|\n[\s\S]*$/, '    run: |\n      echo "allowed=$(cat /opt/dc-allowed) denied=$(cat /opt/dc-denied)"\n      echo "ca=$(cat /opt/dc-ca)"\n'),
    );
    const r = await execPipeline(f, file, ['--egress-network', net.network, '--egress-private', net.subnet]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stderr, /behind a gateway that allows the hosts of egress:/);
    assert.match(r.stderr, /allowed=this is allowed\.example denied=403/);
    assert.match(r.stderr, /dev container gateway: refused denied\.example/);
    const [ev] = await devcontainerEvents(f, r.json.runId);
    made.add(ev!.image);
    const env = execFileSync('docker', ['image', 'inspect', '--format', '{{json .Config.Env}}', ev!.image], { encoding: 'utf8' });
    assert.doesNotMatch(env, /PROXY/i, 'the gateway\'s proxy variables are not kept in the image');
    // the CA bundle the run trusts (by default the host's own) reached the preparing commands, as it reaches a step,
    // through a mount and the prelude: neither its variables nor its text are kept in the image
    const hostBundle = createHash('sha256').update(readFileSync('/etc/ssl/certs/ca-certificates.crt')).digest('hex');
    assert.match(r.stderr, new RegExp(`ca=${hostBundle} /run/runner/ca\\.pem`), "the preparing commands trust the run's bundle");
    assert.doesNotMatch(env, /SSL_CERT_FILE|NODE_EXTRA_CA_CERTS/, 'the bundle\'s variables are not kept in the image');
    const kept = execFileSync('docker', ['run', '--rm', '--entrypoint', 'sh', ev!.image, '-c', 'wc -c < /run/runner/ca.pem 2>/dev/null || echo absent'], { encoding: 'utf8' }).trim();
    assert.match(kept, /^(0|absent)$/, 'the bundle is not kept in the image');
    assert.match(env, /DC_MODE=fixture/, 'containerEnv is');
  } finally {
    net.close();
  }
});

test("the real Claude Code runs in the project's dev container: its CLI added once, behind its gateway, using the project's tool", { timeout: 300_000 }, async () => {
  const KEY = 'sk-ant-api03-devcontainer-key-' + 'x'.repeat(20);
  const server = await ModelServer.start({
    turns: [
      { tool: { name: 'Bash', input: { command: 'dc-hello > hello.txt; echo "mode=$DC_MODE" >> hello.txt; cat /opt/dc-marker >> hello.txt; echo "key=$ANTHROPIC_API_KEY" >> hello.txt', description: 'use the tool' } } },
      { text: 'Wrote hello.txt with the project tool.' },
    ],
    usage: { input: 100, output: 10 },
  });
  try {
    const { f } = await devcontainerProject();
    const file = await writePipeline(
      f,
      `version: 1
name: devcontainer-agent
project: { path: project, push: never }
secrets: [ANTHROPIC_API_KEY]
defaults:
  image: devcontainer
  timeout: 3m
agents:
  coder:
    use: claude-code
    base_url: ${server.url}
    max_turns: 5
steps:
  - id: implement
    agent: coder
    prompt: Use the project's tool.
`,
    );
    const first = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
    assert.equal(first.code, 0, first.stderr);
    assert.match(first.stderr, /dev container: adding claude-code \(from runner\/claude-code:latest\)/);
    const hello = git(f.project, 'show', `${first.json.branch}:hello.txt`);
    assert.equal(hello, "dc-hello: the dev container's own tool\nmode=fixture\nmade-by-postcreate\nkey=runner-gateway-placeholder");
    assert.ok(server.requests.length >= 2);
    for (const q of server.requests) assert.equal(q.headers['x-api-key'], KEY, 'the gateway adds the real key');
    assert.equal(first.json.steps.implement.usage.calls, server.requests.length, 'metered by the gateway');
    const [ev] = await devcontainerEvents(f, first.json.runId);
    made.add(ev!.image);
    const agentImage = execFileSync('docker', ['images', '--format', '{{.Repository}}:{{.Tag}}', 'runner-devcontainer'], { encoding: 'utf8' }).split('\n').find((n) => n.startsWith(`${ev!.image}-claude-code-`));
    assert.ok(agentImage, 'the image with the CLI is kept');
    made.add(agentImage);

    const second = await execPipeline(f, file, [], { env: { ANTHROPIC_API_KEY: KEY } });
    assert.equal(second.code, 0, second.stderr);
    assert.match(second.stderr, /claude-code was added to runner-devcontainer:\S+ before: nothing to prepare/);
  } finally {
    await server.close();
  }
});

test('what a preparation left when its runner died is removed by the next preparation; a live one is kept', { timeout: 240_000 }, async () => {
  const { f } = await devcontainerProject();
  // a process that has ended: its pid is no runner's
  const gone = execFileSync('sh', ['-c', 'sh -c "exit 0" & echo $!; wait'], { encoding: 'utf8' }).trim();
  const left = execFileSync('docker', ['create', '--label', 'dev.runner.devcontainer=prepare', '--label', `dev.runner.devcontainer-pid=${gone}`, 'runner/base:latest', 'true'], { encoding: 'utf8' }).trim();
  const live = execFileSync('docker', ['create', '--label', 'dev.runner.devcontainer=prepare', '--label', `dev.runner.devcontainer-pid=${process.pid}`, 'runner/base:latest', 'true'], { encoding: 'utf8' }).trim();
  try {
    const r = await execPipeline(f, await writePipeline(f, PIPELINE));
    assert.equal(r.code, 0, r.stderr);
    const [ev] = await devcontainerEvents(f, r.json.runId);
    made.add(ev!.image);
    assert.match(r.stderr, /removed 1 container\(s\) an interrupted preparation left/);
    const exists = (id: string) => execFileSync('docker', ['ps', '-a', '-q', '--no-trunc', '--filter', `id=${id}`], { encoding: 'utf8' }).trim() !== '';
    assert.equal(exists(left), false);
    assert.equal(exists(live), true, "a live runner's preparation is its own");
    // the prepared image carries no preparer's labels: its steps are never taken for leftovers
    const labels = JSON.parse(execFileSync('docker', ['image', 'inspect', '--format', '{{json .Config.Labels}}', ev!.image], { encoding: 'utf8' })) as Record<string, string>;
    assert.notEqual(labels['dev.runner.devcontainer'], 'prepare');
    assert.equal(labels['dev.runner.devcontainer-pid'] ?? '', '');
  } finally {
    execFileSync('docker', ['rm', '-f', left, live], { stdio: 'ignore' });
  }
});
