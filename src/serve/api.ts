/**
 * runner serve's HTTP API, thin over the serve loop and the run records.
 *   GET  /healthz                      liveness (no token needed)
 *   GET  /metrics                      Prometheus text: runs by status, step durations, queue length
 *   GET  /api/pipelines                pipelines with their next fire times and file errors
 *   POST /api/pipelines/:name/runs     trigger a run (202; it waits for room under --max-concurrent)
 *   GET  /api/runs[?pipeline=&status=] run records, newest first
 *   GET  /api/runs/:id                 one run record
 *   GET  /api/runs/:id/log             the run's log, live, as Server-Sent Events
 *   POST /api/runs/:id/cancel          cancel a run this server is running
 * With a token, every request but /healthz needs `Authorization: Bearer <token>`.
 */
import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import path from 'node:path';
import { errorMessage, RunnerError } from '../common/errors.js';
import { LogCursor } from '../run/log-cursor.js';
import { listRuns, readRun, runDir } from '../run/records.js';

export interface ServeState {
  pipelines(): Array<{ name: string | null; file: string; nextRuns: string[]; errors: string[] }>;
  trigger(name: string): boolean;
  cancel(runId: string): boolean;
  queueLength(): number;
  runsDir: string;
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, params: string[], url: URL) => Promise<void>;

export function createApi(state: ServeState, token: string | undefined): http.Server {
  const routes: Array<[string, RegExp, Handler]> = [
    ['GET', /^\/healthz$/, async (_q, res) => json(res, 200, { ok: true })],
    ['GET', /^\/metrics$/, async (_q, res) => metrics(res, state)],
    ['GET', /^\/api\/pipelines$/, async (_q, res) => json(res, 200, state.pipelines())],
    [
      'POST',
      /^\/api\/pipelines\/([A-Za-z0-9._-]+)\/runs$/,
      async (_q, res, [name]) =>
        state.trigger(name!) ? json(res, 202, { queued: true, pipeline: name }) : json(res, 404, { error: `no pipeline ${name} (GET /api/pipelines)` }),
    ],
    [
      'GET',
      /^\/api\/runs$/,
      async (_q, res, _p, url) => {
        const p = url.searchParams.get('pipeline');
        const s = url.searchParams.get('status');
        json(res, 200, (await listRuns(state.runsDir)).filter((r) => (!p || r.pipeline === p) && (!s || r.status === s)));
      },
    ],
    ['GET', /^\/api\/runs\/([A-Za-z0-9._-]+)$/, async (_q, res, [id]) => json(res, 200, await readRun(state.runsDir, id!))],
    ['GET', /^\/api\/runs\/([A-Za-z0-9._-]+)\/log$/, async (req, res, [id]) => followLog(req, res, state.runsDir, id!)],
    [
      'POST',
      /^\/api\/runs\/([A-Za-z0-9._-]+)\/cancel$/,
      async (_q, res, [id]) =>
        state.cancel(id!) ? json(res, 202, { canceling: id }) : json(res, 404, { error: `run ${id} is not running on this server` }),
    ],
  ];

  return http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (token && url.pathname !== '/healthz' && !authorized(req, token)) {
      json(res, 401, { error: 'a token is required: send Authorization: Bearer <RUNNER_TOKEN>' });
      return;
    }
    for (const [method, re, handler] of routes) {
      const m = re.exec(url.pathname);
      if (!m || req.method !== method) continue;
      handler(req, res, m.slice(1), url).catch((err) => {
        const code = err instanceof RunnerError ? err.code : '';
        const status = code === 'run_unknown' ? 404 : code === 'unsafe_name' ? 400 : 500;
        if (!res.headersSent) json(res, status, { error: errorMessage(err) });
        else res.end();
      });
      return;
    }
    json(res, 404, { error: `no route ${req.method} ${url.pathname}` });
  });
}

function authorized(req: http.IncomingMessage, token: string): boolean {
  const given = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${JSON.stringify(body)}\n`);
}

async function followLog(req: http.IncomingMessage, res: http.ServerResponse, runsDir: string, runId: string): Promise<void> {
  await readRun(runsDir, runId); // 404 for an unknown run, before the stream starts
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive' });
  const cursor = new LogCursor(path.join(runDir(runsDir, runId), 'steps'));
  let open = true;
  req.on('close', () => (open = false));
  while (open) {
    const rec = await readRun(runsDir, runId);
    for (const l of await cursor.read(rec)) res.write(`data: ${JSON.stringify(l)}\n\n`);
    if (rec.status !== 'running') {
      res.write(`event: end\ndata: ${JSON.stringify({ status: rec.status })}\n\n`);
      break;
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  res.end();
}

async function metrics(res: http.ServerResponse, state: ServeState): Promise<void> {
  const runs = await listRuns(state.runsDir);
  const byStatus = new Map<string, number>();
  const durations = new Map<string, { sum: number; count: number }>();
  for (const r of runs) {
    byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    const d = durations.get(r.pipeline) ?? { sum: 0, count: 0 };
    for (const s of r.steps) if (s.status !== 'skipped') (d.sum += s.durationMs / 1000), d.count++;
    durations.set(r.pipeline, d);
  }
  const lines = [
    '# HELP runner_runs Runs recorded in the runner home, by status.',
    '# TYPE runner_runs gauge',
    ...[...byStatus].map(([s, n]) => `runner_runs{status="${s}"} ${n}`),
    '# HELP runner_step_duration_seconds Time steps took, by pipeline.',
    '# TYPE runner_step_duration_seconds summary',
    ...[...durations].flatMap(([p, d]) => [`runner_step_duration_seconds_sum{pipeline="${p}"} ${d.sum}`, `runner_step_duration_seconds_count{pipeline="${p}"} ${d.count}`]),
    '# HELP runner_queue_length Runs waiting to start.',
    '# TYPE runner_queue_length gauge',
    `runner_queue_length ${state.queueLength()}`,
  ];
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  res.end(`${lines.join('\n')}\n`);
}
