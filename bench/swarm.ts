/**
 * bench/swarm: what scale-out costs. (1) A one-step run on a project of about
 * 1,000 files, `--engine swarm` (on the lab's 3-node swarm) against the local
 * engine, alternated in one run: the ratio of medians (aim: 3 or less). (2)
 * The tar round trip of a 13,000-file worktree (packTree, then receiveTree
 * into an empty directory) against `tar -c | tar -x` of the same tree. (3)
 * An agent step on a worker, from `runner exec --engine swarm` to the CLI's
 * first model request, against `docker run` of the same image here (aim: 2
 * or less). (4) The same step under `runner serve --engine swarm --warm 2`,
 * from the API's trigger (its gateway made ahead on the manager, on an overlay
 * of its own), against the same `docker run` here (issue 36: 1.2 or less).
 *
 *   make bench     (or: node dist/bench/swarm.js [ROUNDS]); brings the lab up if it is not, and down after
 */
import { execFile, execFileSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { packTree, receiveTree } from '../src/workspace/tar-transfer.js';
import { CLI, git, makeProject, writePipeline } from '../test/fixtures/project.js';
import { agentPipeline, dockerRunArgs, served, toFirstRequest } from './first-request.js';
import { ModelServer } from '../test/fixtures/model-server.js';
import { median, report, timed } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const LAB = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../scripts/swarm-lab.sh');
const run = promisify(execFile);

async function tree(dir: string, files: number): Promise<void> {
  for (let i = 0; i < files; i++) {
    const d = path.join(dir, `d${i % 100}`, `e${i % 7}`);
    await mkdir(d, { recursive: true });
    await writeFile(path.join(d, `f${i}.txt`), `file ${i}\n`.repeat(1 + (i % 50)));
  }
}

// (2) the tar round trip
const big = await mkdtemp(path.join(os.tmpdir(), 'runner-bench-tar-'));
try {
  await tree(path.join(big, 'src'), 13_000);
  const ours: number[] = [];
  const plain: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    const a = path.join(big, `in-${i}`);
    ours.push(await timed(() => receiveTree(packTree(path.join(big, 'src')), a, { uid: 0, gid: 0 })));
    const b = path.join(big, `plain-${i}`);
    await mkdir(b);
    plain.push(await timed(() => run('sh', ['-c', `tar -c -C "${path.join(big, 'src')}" . | tar -x -C "${b}"`])));
    await rm(a, { recursive: true });
    await rm(b, { recursive: true });
  }
  console.log(`tar round trip of 13,000 files: ${median(ours).toFixed(0)} ms (tar-fs, checked) vs ${median(plain).toFixed(0)} ms (tar | tar); ratio ${(median(ours) / median(plain)).toFixed(2)} (no aim: what the checks cost)`);
} finally {
  await rm(big, { recursive: true, force: true });
}

// (1) a one-step run, swarm against local
const wasUp = execFileSync('docker', ['info', '-f', '{{.Swarm.LocalNodeState}}'], { encoding: 'utf8' }).trim() === 'active';
if (!wasUp) await run('bash', [LAB, 'up'], { env: { ...process.env, LAB_IMAGES: 'runner/base:latest runner/claude-code:latest' }, maxBuffer: 1 << 24 });
else await run('bash', [LAB, 'load', 'runner/base:latest', 'runner/claude-code:latest'], { maxBuffer: 1 << 24 });
const f = await makeProject({ remote: false });
try {
  await tree(f.project, 1000);
  git(f.project, 'add', '-A');
  git(f.project, '-c', 'user.name=b', '-c', 'user.email=b@l', 'commit', '-qm', 'files');
  const file = await writePipeline(f, `version: 1\nname: bench\nproject: { path: project, push: never }\nsteps:\n  - id: one\n    image: runner/base:latest\n    run: echo done > done.txt\n`);
  const once = (engine: string) => timed(() => run(process.execPath, [CLI, 'exec', file, '--home', f.home, '--engine', engine], { env: { ...process.env, CI: 'true' } }));
  await once('local');
  await once('swarm');
  const local: number[] = [];
  const swarm: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    local.push(await once('local'));
    swarm.push(await once('swarm'));
  }
  report({
    bench: 'swarm',
    against: 'the local engine',
    aim: '<= 3',
    ratio: median(swarm) / median(local),
    detail: `one step on 1,000 files: swarm ${median(swarm).toFixed(0)} ms, local ${median(local).toFixed(0)} ms (medians of ${ROUNDS})`,
  });
  // (3) an agent's start on a worker
  const server = await ModelServer.start({ turns: Array.from({ length: 8 * ROUNDS + 8 }, () => ({ text: 'Done.' })) });
  try {
    const agent = await writePipeline(f, agentPipeline(server.url, '    placement: ["node.role == worker"]\n'), 'agent.yaml');
    const runner = [CLI, 'exec', agent, '--home', f.home, '--engine', 'swarm'];
    const docker = dockerRunArgs(server.url);
    await toFirstRequest(server, process.execPath, runner);
    await toFirstRequest(server, 'docker', docker);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      a.push(await toFirstRequest(server, process.execPath, runner));
      b.push(await toFirstRequest(server, 'docker', docker));
    }
    report({
      bench: 'agent start on swarm',
      against: 'docker run of the same image here',
      aim: '<= 2',
      ratio: median(a) / median(b),
      detail: `runner exec --engine swarm ${median(a).toFixed(0)} ms, docker run ${median(b).toFixed(0)} ms to the CLI's first model request (medians of ${ROUNDS})`,
    });
    // (4) the swarm kept warm: serve's gateways made ahead on the manager
    const onWorker = { rounds: ROUNDS, extra: '    placement: ["node.role == worker"]\n', args: ['--engine', 'swarm'] };
    const cold = await served(server, f, { ...onWorker, warm: 0 });
    const warm = await served(server, f, { ...onWorker, warm: 2 });
    const d: number[] = [];
    for (let i = 0; i < ROUNDS; i++) d.push(await toFirstRequest(server, 'docker', docker));
    report({
      bench: 'agent start on swarm, warm',
      against: 'docker run of the same image here, cold',
      aim: '<= 1.2',
      ratio: median(warm) / median(d),
      detail: `runner serve --engine swarm --warm 2, from the API's trigger to the CLI's first model request on a worker: ${median(warm).toFixed(0)} ms (${warm.map((x) => x.toFixed(0)).join(' ')}); docker run here ${median(d).toFixed(0)} ms; the same serve without --warm ${median(cold).toFixed(0)} ms (medians of ${ROUNDS})`,
    });
  } finally {
    await server.close();
  }
} finally {
  await f.cleanup();
  if (!wasUp) await run('bash', [LAB, 'down'], { maxBuffer: 1 << 24 });
}
