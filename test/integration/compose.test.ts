/**
 * The compose deployment end to end: the runner's own image (make
 * runner-image) started by docker-compose.yml with Debian's docker-compose
 * (v1), and with `docker compose` (v2) where the Docker CLI has it. A pipeline
 * scheduled every minute fires, its run shows in the API, and `down` leaves
 * no step container behind. A runner home mounted at another path than the
 * host's is refused at start with an error that says what to change.
 */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { git, IMAGE, projectsForThisFile, until } from '../fixtures/project.js';

const fixture = projectsForThisFile();
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const COMPOSE_FILE = path.join(REPO, 'docker-compose.yml');
const RUNNER_IMAGE = 'runner/runner:latest';

function imagePresent(): void {
  const r = spawnSync('docker', ['image', 'inspect', RUNNER_IMAGE], { stdio: 'ignore' });
  assert.equal(r.status, 0, `${RUNNER_IMAGE} is missing: build it with make runner-image`);
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo;
      srv.close(() => resolve(port));
    });
    srv.on('error', reject);
  });
}

const composes: Array<{ name: string; cmd: string[] }> = [{ name: 'docker-compose (v1)', cmd: ['docker-compose'] }];
if (spawnSync('docker', ['compose', 'version'], { stdio: 'ignore' }).status === 0) composes.push({ name: 'docker compose (v2)', cmd: ['docker', 'compose'] });

for (const compose of composes) {
  test(`${compose.name}: up, a scheduled run fires and shows in the API, down leaves no step container`, { timeout: 240_000 }, async () => {
    imagePresent();
    const f = await fixture();
    const pipelines = path.join(f.root, 'pipelines');
    await mkdir(pipelines);
    await mkdir(f.home);
    await writeFile(
      path.join(pipelines, 'tick.yaml'),
      `version: 1
name: tick
project: { path: ../project, push: never }
defaults: { image: ${IMAGE} }
secrets: [NEWS_API_KEY]
schedule:
  - cron: "* * * * *"
steps:
  - id: work
    secrets: [NEWS_API_KEY]
    run: |
      echo fired > fired.txt
      echo "key: $NEWS_API_KEY"
      echo step started
      sleep 300
`,
    );
    // A project the runner's container cannot see: its run is recorded as not started, saying why.
    await writeFile(
      path.join(pipelines, 'outside.yaml'),
      `version: 1\nname: outside\nproject: { path: /srv/not-mounted-${path.basename(f.root)}, push: never }\ndefaults: { image: ${IMAGE} }\nsteps:\n  - id: a\n    run: "true"\n`,
    );
    const secrets = path.join(f.root, 'secrets.env');
    await writeFile(secrets, 'NEWS_API_KEY=news-key-4f9a2c71\n', { mode: 0o600 });
    const port = await freePort();
    const env = {
      ...process.env,
      RUNNER_PIPELINES: pipelines,
      RUNNER_PROJECTS: f.root,
      RUNNER_DATA: f.home,
      RUNNER_SECRETS: secrets,
      RUNNER_LISTEN: `127.0.0.1:${port}`,
      RUNNER_GRACE: '2s',
    };
    const project = `runner-e2e-${path.basename(f.root).toLowerCase().replace(/[^a-z0-9]/g, '')}`;
    const run = (...args: string[]) => {
      const [bin, ...pre] = compose.cmd;
      const r = spawnSync(bin!, [...pre, '-p', project, '-f', COMPOSE_FILE, ...args], { env, encoding: 'utf8' });
      assert.equal(r.status, 0, `${compose.cmd.join(' ')} ${args.join(' ')} failed:\n${r.stdout}${r.stderr}`);
      return r.stdout + r.stderr;
    };
    const base = `http://127.0.0.1:${port}`;
    let up = false;
    try {
      run('up', '-d');
      up = true;
      const pipelinesSeen = await until('the API', async () => {
        const list = (await (await fetch(`${base}/api/pipelines`)).json()) as Array<{ name: string; nextRuns: string[] }>;
        return list.length === 2 ? list : undefined;
      }, 30_000);
      const tick = pipelinesSeen.find((p) => p.name === 'tick');
      assert.equal(tick?.nextRuns.length, 1);
      const outside = (await (await fetch(`${base}/api/pipelines/outside/runs`, { method: 'POST' })).json()) as { runId: string };
      const refused = await until('the outside run to be marked', async () => {
        const r = (await (await fetch(`${base}/api/runs/${outside.runId}`)).json()) as { status: string; error: { message: string } };
        return r.status === 'not_started' ? r : undefined;
      }, 30_000);
      assert.match(refused.error.message, /is not visible inside the runner's container .*put the project under RUNNER_PROJECTS/);

      // The minute turns, the schedule fires, the step starts.
      const fired = await until('the scheduled run to start its step', async () => {
        const runs = (await (await fetch(`${base}/api/runs?pipeline=tick`)).json()) as Array<{ runId: string; status: string; current: unknown }>;
        return runs.find((r) => r.status === 'running' && r.current);
      }, 100_000);
      const stepContainers = () =>
        execFileSync('docker', ['ps', '-a', '-q', '--filter', `label=dev.runner.home=${f.home}`], { encoding: 'utf8' }).split('\n').filter(Boolean);
      await until('the step container', async () => (stepContainers().length === 1 ? true : undefined), 30_000);
      // The scheduled run got its secret from the mounted file, masked wherever the runner writes it.
      const log = await until('the step log', async () => {
        const text = await readFile(path.join(f.home, 'runs', fired.runId, 'steps', 'work.log'), 'utf8').catch(() => '');
        return text.includes('step started') ? text : undefined;
      }, 30_000);
      assert.match(log, /^key: \*\*\*$/m);
      assert.doesNotMatch(log, /news-key-4f9a2c71/);

      run('down');
      up = false;
      assert.deepEqual(stepContainers(), [], 'down leaves no step container');
      const record = JSON.parse(execFileSync('cat', [path.join(f.home, 'runs', fired.runId, 'run.json')], { encoding: 'utf8' })) as { status: string; branch: string };
      assert.equal(record.status, 'canceled', 'the runner canceled its run cleanly on stop');
      assert.equal(git(f.project, 'show', `${record.branch}:fired.txt`), 'fired', "the step's work was committed before the stop");
    } finally {
      if (up) spawnSync(compose.cmd[0]!, [...compose.cmd.slice(1), '-p', project, '-f', COMPOSE_FILE, 'down'], { env, stdio: 'ignore' });
    }
  });
}

test('a runner home mounted at another path than the host path is refused at start, saying what to change', { timeout: 60_000 }, async () => {
  imagePresent();
  const f = await fixture();
  const hostDir = path.join(f.root, 'data');
  await mkdir(hostDir);
  const r = spawnSync(
    'docker',
    ['run', '--rm', '-v', '/var/run/docker.sock:/var/run/docker.sock', '-v', `${hostDir}:/data`, '-v', `${f.root}:/pipelines:ro`, RUNNER_IMAGE, 'serve', '--pipelines', '/pipelines', '--home', '/data'],
    { encoding: 'utf8', timeout: 50_000 },
  );
  assert.notEqual(r.status, 0, r.stdout + r.stderr);
  assert.match(r.stderr, new RegExp(`/data is mounted into the runner's container at /data from the host's ${hostDir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}.*identical path`));
});
