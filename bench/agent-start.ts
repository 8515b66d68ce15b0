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
import { spawn } from 'node:child_process';
import { ModelServer } from '../test/fixtures/model-server.js';
import { CLI, makeProject, writePipeline } from '../test/fixtures/project.js';
import { median, report } from './report.js';

const ROUNDS = Number(process.argv[2] ?? 7);
const KEY = 'sk-ant-bench-not-a-key-000000000000';


/** Milliseconds from spawning `cmd` to the model's first agent request; then waits for the command to end. */
async function toFirstRequest(server: ModelServer, cmd: string, args: string[]): Promise<number> {
  const before = server.agentRequests().length;
  const t0 = performance.now();
  const child = spawn(cmd, args, { stdio: 'ignore', env: { ...process.env, ANTHROPIC_API_KEY: KEY, CI: 'true' } });
  let exited = false;
  const ended = new Promise<number | null>((r) => child.on('close', (code) => ((exited = true), r(code))));
  let at: number | undefined;
  while (at === undefined) {
    if (server.agentRequests().length > before) at = performance.now() - t0;
    else if (exited) throw new Error(`${cmd} ${args.join(' ')} ended (exit ${await ended}) before its first model request`);
    else await new Promise((r) => setTimeout(r, 5));
  }
  const code = await ended;
  if (code !== 0) throw new Error(`${cmd} ${args.join(' ')} exited ${code}`);
  return at;
}

const server = await ModelServer.start({ turns: Array.from({ length: 4 * ROUNDS }, () => ({ text: 'Done.' })) });
const f = await makeProject({ remote: false });
try {
  const file = await writePipeline(
    f,
    `version: 1\nname: bench\nproject: { path: project, push: never }\nsecrets: [ANTHROPIC_API_KEY]\nagents:\n  a: { use: claude-code, base_url: "${server.url}" }\nsteps:\n  - id: go\n    agent: a\n    prompt: say done\n`,
  );
  const runner = [CLI, 'exec', file, '--home', f.home];
  const docker = [
    'run', '--rm', '--network', 'bridge', '--user', '65532:65532', '-e', 'ANTHROPIC_API_KEY', '-e', `ANTHROPIC_BASE_URL=${server.url}`,
    '-e', 'DISABLE_AUTOUPDATER=1', '-e', 'DISABLE_TELEMETRY=1', '-e', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
    'runner/claude-code:latest', 'claude', '-p', '--output-format', 'json', '--dangerously-skip-permissions', '--', 'say done',
  ];
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
