/**
 * What the agent-start benches share: a one-step claude-code pipeline, `docker run` of the same image and CLI with
 * the same model and flags, and the time from spawning a command to the CLI's first request to the scripted model.
 */
import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import type { ModelServer } from '../test/fixtures/model-server.js';
import { serveFolder, type Fixture } from '../test/fixtures/project.js';

export const KEY = 'sk-ant-bench-not-a-key-000000000000';

/** The pipeline: one claude-code step against `url`, with `extra` lines under the step (placement:, say). */
export function agentPipeline(url: string, extra = ''): string {
  return `version: 1\nname: bench\nproject: { path: project, push: never }\nsecrets: [ANTHROPIC_API_KEY]\nagents:\n  a: { use: claude-code, base_url: "${url}" }\nsteps:\n  - id: go\n    agent: a\n    prompt: say done\n${extra}`;
}

/** `docker run` of the agent's image and CLI, as the preset runs it, with nothing of the runner's. */
export function dockerRunArgs(url: string): string[] {
  return [
    'run', '--rm', '--network', 'bridge', '--user', '65532:65532', '-e', 'ANTHROPIC_API_KEY', '-e', `ANTHROPIC_BASE_URL=${url}`,
    '-e', 'DISABLE_AUTOUPDATER=1', '-e', 'DISABLE_TELEMETRY=1', '-e', 'CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1',
    'runner/claude-code:latest', 'claude', '-p', '--output-format', 'json', '--dangerously-skip-permissions', '--', 'say done',
  ];
}

/** Milliseconds from spawning `cmd` to the model's first agent request; then waits for the command to end. */
export async function toFirstRequest(server: ModelServer, cmd: string, args: string[]): Promise<number> {
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

/** Milliseconds from the API's trigger to the model's first request, then to the run's end. */
export async function servedToFirstRequest(server: ModelServer, base: string, runIds?: string[]): Promise<number> {
  const before = server.agentRequests().length;
  const t0 = performance.now();
  const res = await fetch(`${base}/api/pipelines/bench/runs`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
  if (res.status !== 202) throw new Error(`trigger: ${res.status} ${await res.text()}`);
  const { runId } = (await res.json()) as { runId: string };
  runIds?.push(runId);
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

/**
 * `rounds` runs of the agent pipeline (with `extra` lines under its step) under one `runner serve` (with `args`, and
 * `--warm N` when `warm`), each from the API's trigger to the model's first request, after one run to warm up.
 */
export async function served(server: ModelServer, f: Fixture, o: { warm: number; rounds: number; extra?: string; args?: string[] }): Promise<number[] & { warmContainers: number }> {
  const warm = o.warm;
  // the served pipeline names its project by its full path (the folder is not the project's)
  const s = await serveFolder(f, { 'bench.yaml': agentPipeline(server.url, o.extra).replace('path: project,', `path: ${f.project},`) }, '127.0.0.1:0', { env: { ANTHROPIC_API_KEY: KEY }, args: [...(o.args ?? []), ...(warm ? ['--warm', String(warm)] : [])] });
  try {
    await servedToFirstRequest(server, s.base);
    const out: number[] = [];
    const runIds: string[] = [];
    for (let i = 0; i < o.rounds; i++) {
      // the pool has made the gateway (and the step's container) behind the one the last run took
      await new Promise((r) => setTimeout(r, warm ? 1500 : 200));
      out.push(await servedToFirstRequest(server, s.base, runIds));
    }
    // how many of the measured runs' steps claimed a warm container (run/warm/: the step's log says so)
    let warmContainers = 0;
    for (const id of runIds) {
      const logs = await readdir(path.join(f.home, 'runs', id, 'steps')).catch(() => [] as string[]);
      for (const l of logs.filter((n) => n.endsWith('.log'))) if ((await readFile(path.join(f.home, 'runs', id, 'steps', l), 'utf8')).includes('container: a warm one')) warmContainers++;
    }
    return Object.assign(out, { warmContainers });
  } finally {
    s.child.kill('SIGTERM');
    await s.exited;
  }
}
