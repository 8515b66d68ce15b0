/**
 * bench/agent-start: how long the runner takes to get an agent going. From
 * `runner exec` of a one-step claude-code pipeline to the CLI's first request
 * to the (scripted) model, against `docker run` of the same image and CLI with
 * the same model and flags, alternated in the same run. Prints the ratio of
 * their medians (aim: 1.2 or less). Both reach the same scripted model, which
 * answers at once: what is measured is the start, not a model.
 *
 *   make bench            (or: node dist/bench/agent-start.js [ROUNDS])
 */
import { ModelServer } from '../test/fixtures/model-server.js';
import { CLI, makeProject, writePipeline } from '../test/fixtures/project.js';
import { agentPipeline, dockerRunArgs, toFirstRequest } from './first-request.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 7);

const server = await ModelServer.start({ turns: Array.from({ length: 4 * ROUNDS }, () => ({ text: 'Done.' })) });
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
  const ratio = median(a) / median(b);
  report({
    bench: 'agent start',
    against: 'docker run of the same image and CLI',
    aim: '<= 1.2',
    ratio,
    detail: `runner exec ${median(a).toFixed(0)} ms, docker run ${median(b).toFixed(0)} ms to the CLI's first model request (medians of ${ROUNDS})`,
  });
} finally {
  await server.close();
  await f.cleanup();
}
