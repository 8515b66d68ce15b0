/**
 * bench/agent-start: how long the runner takes to get an agent going. From
 * spawning `runner exec` of a one-step claude-code pipeline (its gateway
 * included) to the CLI's first request to the scripted model, against
 * `docker run` of the same image and CLI with the same flags (no runner, no
 * gateway), alternated in the same run.
 *
 * Then the same step under `runner serve` (no process of the runner's own to start), from the API's trigger to the
 * first request: without warm gateways, and with `--warm 2` (issue 36's "agent start, a warm sandbox").
 *
 *   make bench            (or: node dist/bench/agent-start.js [ROUNDS])
 */
import { ModelServer } from '../test/fixtures/model-server.js';
import { CLI, makeProject, serveFolder, writePipeline, type Fixture } from '../test/fixtures/project.js';
import { agentPipeline, dockerRunArgs, KEY, toFirstRequest } from './first-request.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 7);

/** Milliseconds from the API's trigger to the model's first request, then to the run's end. */
async function servedToFirstRequest(server: ModelServer, base: string): Promise<number> {
  const before = server.agentRequests().length;
  const t0 = performance.now();
  const res = await fetch(`${base}/api/pipelines/bench/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${await res.text()}`);
  const { runId } = (await res.json()) as { runId: string };
  let at: number | undefined;
  for (let n = 0; at === undefined; n++) {
    if (server.agentRequests().length > before) at = performance.now() - t0;
    else await new Promise((r) => setTimeout(r, 5));
    if (n % 200 === 199) {
      const run = (await (await fetch(`${base}/api/runs/${runId}`)).json()) as { status: string; error?: { message: string } };
      if (!['queued', 'starting', 'running'].includes(run.status)) throw new Error(`run ${runId} ${run.status} before its first model request: ${run.error?.message ?? ''}`);
    }
  }
  for (;;) {
    const run = (await (await fetch(`${base}/api/runs/${runId}`)).json()) as { status: string };
    if (!['queued', 'starting', 'running'].includes(run.status)) {
      if (run.status !== 'succeeded') throw new Error(`run ${runId} ${run.status}`);
      return at;
    }
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function served(server: ModelServer, f: Fixture, warm: number): Promise<number[]> {
  // the served pipeline names its project by its full path (the folder is not the project's)
  const s = await serveFolder(f, { 'bench.yaml': agentPipeline(server.url).replace('path: project,', `path: ${f.project},`) }, '127.0.0.1:0', { env: { ANTHROPIC_API_KEY: KEY }, args: warm ? ['--warm', String(warm)] : [] });
  try {
    await servedToFirstRequest(server, s.base);
    const out: number[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      // the pool has made the gateway behind the one the last run took
      await new Promise((r) => setTimeout(r, warm ? 1500 : 200));
      out.push(await servedToFirstRequest(server, s.base));
    }
    return out;
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
}

const server = await ModelServer.start({ turns: Array.from({ length: 8 * ROUNDS + 8 }, () => ({ text: 'Done.' })) });
const f = await makeProject({ remote: false });
try {
  const file = await writePipeline(f, agentPipeline(server.url));
  const runner = [CLI, 'exec', file, '--home', f.home];
  const docker = dockerRunArgs(server.url);
  // One of each first: images in the page cache, the CLI's first start.
  await toFirstRequest(server, process.execPath, runner);
  await toFirstRequest(server, 'docker', docker);
  const a: number[] = [];
  const b: number[] = [];
  for (let i = 0; i < ROUNDS; i++) {
    a.push(await toFirstRequest(server, process.execPath, runner));
    b.push(await toFirstRequest(server, 'docker', docker));
  }
  report({
    bench: 'agent start',
    against: 'docker run of the same image and CLI',
    aim: '<= 1.2',
    ratio: median(a) / median(b),
    detail: `runner exec ${median(a).toFixed(0)} ms, docker run ${median(b).toFixed(0)} ms to the CLI's first model request (medians of ${ROUNDS})`,
  });
  const cold = await served(server, f, 0);
  const warm = await served(server, f, 2);
  const d: number[] = [];
  for (let i = 0; i < ROUNDS; i++) d.push(await toFirstRequest(server, 'docker', docker));
  report({
    bench: 'agent start, serve, cold',
    against: 'docker run of the same image and CLI',
    aim: '<= 1.2',
    ratio: median(cold) / median(d),
    detail: `runner serve, from the API's trigger: ${median(cold).toFixed(0)} ms (${cold.map((x) => x.toFixed(0)).join(' ')}); docker run ${median(d).toFixed(0)} ms (medians of ${ROUNDS})`,
  });
  report({
    bench: 'agent start, serve, warm gateway',
    against: 'docker run of the same image and CLI',
    aim: '<= 0.7',
    ratio: median(warm) / median(d),
    detail: `runner serve --warm 2, from the API's trigger: ${median(warm).toFixed(0)} ms (${warm.map((x) => x.toFixed(0)).join(' ')}); docker run ${median(d).toFixed(0)} ms; the step's container starts cold (medians of ${ROUNDS})`,
  });
} finally {
  await server.close();
  await f.cleanup();
}
