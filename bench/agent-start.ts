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
import { CLI, makeProject, writePipeline } from '../test/fixtures/project.js';
import { agentPipeline, dockerRunArgs, served, toFirstRequest } from './first-request.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 7);

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
  const cold = await served(server, f, { warm: 0, rounds: ROUNDS });
  const warm = await served(server, f, { warm: 2, rounds: ROUNDS });
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
    bench: 'agent start, serve, warm',
    against: 'docker run of the same image and CLI',
    aim: '<= 0.7',
    ratio: median(warm) / median(d),
    detail: `runner serve --warm 2, from the API's trigger: ${median(warm).toFixed(0)} ms (${warm.map((x) => x.toFixed(0)).join(' ')}); docker run ${median(d).toFixed(0)} ms; the step's container a warm one in ${warm.warmContainers} of ${ROUNDS} runs (medians of ${ROUNDS})`,
  });
} finally {
  await server.close();
  await f.cleanup();
}
