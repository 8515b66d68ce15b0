/**
 * runner serve's HTTP API and dashboard, thin over the serve loop and the run records.
 *   GET  /healthz                      liveness (no token needed)
 *   GET  /metrics                      Prometheus text: runs by status, step durations, queue length (of the projects it serves),
 *                                      step gateways kept warm (--warm)
 *   GET  /api/pipelines                pipelines with their next fire times, file errors, and today's spend against
 *                                      their day budget (today: {spentUsd, budgetPerDayUsd})
 *   GET  /api/warm                     step gateways kept warm now, those with the step's container made too, and how many are kept: {gateways, containers, size} (--warm)
 *   POST /api/pipelines/:name/runs     trigger a run: 202 with its run id (it waits for room under --max-concurrent);
 *                                      an optional JSON body {"inputs": {"name": "value"}} sets the pipeline's inputs
 *   GET  /api/runs[?pipeline=&status=&limit=] this server's queued and running runs, then the other records, newest first
 *                                      (summaries, with project, startedBy, costUsd and tokens: the whole record is GET /api/runs/:id)
 *   GET  /api/runs/:id                 one run: its record (not_started with its error, for one that never did), or
 *                                      {status: queued | starting} while this server holds it; with `plan`, every step of
 *                                      its pipeline and where it stands (runs/plan-view.ts), and while it runs `activity`,
 *                                      what each running step is doing (step-activity.ts)
 *   GET  /api/runs/:id/log             the run's log, live, as Server-Sent Events (one watcher per run, however many
 *                                      follow it: log-watch.ts); at most so many at once, per client address and in
 *                                      all (stream-caps.ts): a 429 or 503 past them
 *   GET  /api/runs/:id/diff[?file=PATH] the run's change against its base, as a patch; with file, that path's part(s) only
 *   GET  /api/runs/:id/diff/files      the files the patch changes: path, status, lines added and removed, binary, size
 *                                      (diff-index.ts: a patch of thousands of files is listed, then read one file at a time)
 *   GET  /api/runs/:id/delivery        what a merge or apply would do, to confirm it: project, branches, deliverable
 *                                      and why not (delivery-view.ts)
 *   POST /api/runs/:id/merge           merge the run's branch, body {"into"?: branch, "squash"?: bool}; POST .../apply
 *                                      applies it uncommitted, body {} or none. The CLI's operation and guards
 *                                      (delivery/deliver.ts): a refusal is a 409 {error, code, details} that changed
 *                                      nothing; each attempt is written into the record's deliveries, with who asked
 *   POST /api/runs/:id/rerun           a new run of the same pipeline with the same inputs: 202 {runId, rerunOf}
 *   POST /api/runs/:id/cancel          cancel a run this server is running or has queued
 *   POST /api/runs/:id/approve|reject  decide a run waiting at a gate {comment?}: approve 202 (it goes on), reject 200
 *   POST /api/runs/:id/resume          go on from the first step not completed {acceptChangedPipeline?}: 202
 *   POST /api/runs/:id/fork            a new run from a step of this one {from, inputs?}: 202 {runId, forkOf}
 *   POST /mcp                          the MCP tools of `runner mcp` (src/mcp/tools.ts) over the SDK's streamable HTTP
 *                                      transport, stateless (no session): this server's pipelines folder, its
 *                                      --project folders for agent tasks, its queue; behind the token like the rest
 *                                      (Authorization: Bearer); runs and deliveries recorded as by "mcp" from the address
 *   GET  /, /login, /assets/*          the dashboard (see dashboard.ts); POST /login, /logout: its session
 * Runs started and deliveries made here are recorded as by "dashboard" when the request says
 * `x-runner-client: dashboard`, else by "api", with the client's address.
 * Who may call what is decided in access.ts.
 */
import { createReadStream } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { pipeline as pipe } from 'node:stream/promises';
import { errorMessage, RunnerError } from '../common/errors.js';
import { DeliveryRefused } from '../delivery/refusal.js';
import { runListing, type DeliveredBy, type RunRecord, type StartedBy } from '../run/record.js';
import { listRuns, readRun, runDir } from '../run/records.js';
import { cancelRunOf } from '../runs/cancel.js';
import { applyRunOf, mergeRunOf } from '../runs/deliver.js';
import { diffFilesOf, filePatchOf, patchOf } from '../runs/diff.js';
import type { Caller, Door, StartDoor } from '../runs/door.js';
import { listRunsOf } from '../runs/list.js';
import { previewDelivery } from '../runs/preview.js';
import { rerunOf } from '../runs/rerun.js';
import { decideRunOf, forkRunOf, resumeRunOf } from '../runs/resume.js';
import { servedBy } from '../runs/scope.js';
import { runView, showRun, type NotStarted } from '../runs/show.js';
import { sumUsage } from '../agents/usage.js';
import { checkAccess, LOGGED_OUT_COOKIE, sessionCookie, tokenMatches } from './access.js';
import { SECURITY_HEADERS, withLoginError, withLogout, type Asset } from './dashboard.js';
import { spentTodayByPipeline } from './day-budget.js';
import { LogWatches } from './log-watch.js';
import { StepActivities } from './step-activity.js';
import { DEFAULT_STREAM_CAPS, StreamCaps, type StreamCapSettings } from './stream-caps.js';

export type { NotStarted } from '../runs/show.js';

/** What the API serves: a door (runs/door.ts: the home, the projects it serves, the runs it holds) with serve's queue. */
export interface ServeState extends Door {
  pipelines(): Array<{
    name: string | null;
    file: string;
    nextRuns: string[];
    errors: string[];
    inputs: Record<string, { description?: string | undefined; default?: string | undefined }>;
    /** its newest run, when that one could not start */
    lastFailure: { runId: string; at: string; error: string } | null;
    /** the smallest budget_per_day in dollars of its schedule entries; null when none sets one */
    budgetPerDayUsd: number | null;
  }>;
  /** the new run's id, or undefined for an unknown pipeline; throws bad_input for inputs the pipeline does not take */
  trigger(name: string, inputs: Record<string, string>, startedBy: StartedBy): Promise<string | undefined>;
  /** true when the run was running (now canceling) or queued (now not_started) */
  cancel(runId: string): Promise<boolean>;
  /** goes on with a run resume.ts prepared, through the server's holder */
  continueRun: StartDoor['continueRun'];
  /** real paths: a resumed or forked run's pipeline file must lie under these */
  pipelineDirs: string[];
  queueLength(): number;
  /** gateways kept warm now, and how many are kept (runner serve --warm N) */
  warm?(): { gateways: number; containers: number; size: number };
}

export interface ApiOptions {
  /** caps on live logs streamed at once, and when a stalled one is cut (defaults: DEFAULT_STREAM_CAPS) */
  logStreams?: Partial<StreamCapSettings>;
  /** told what the API could not do on its own (a live log that could not be read) */
  say?: (message: string) => void;
  /** /mcp: the MCP tools over this server's runs, for one request (its client's address); absent: no /mcp */
  mcp?: { backendFor: (req: http.IncomingMessage) => StartDoor & Caller; version: string };
}

type Handler = (req: http.IncomingMessage, res: http.ServerResponse, params: string[], url: URL) => Promise<void>;

const ID = '([A-Za-z0-9._-]+)';

export function createApi(state: ServeState, token: string | undefined, assets: Map<string, Asset>, opts: ApiOptions = {}): http.Server {
  const dashboard = token && assets.has('/') ? new Map([...assets, ['/', withLogout(assets.get('/')!)]]) : assets;
  // A run's record; while this server holds it queued or is starting it, what it is doing now. Every run
  // operation below is one of runs/, which checks the run (its id, held here, the server's scope) itself.
  const record = (id: string): Promise<RunRecord | NotStarted> => showRun(state, id);
  const activities = new StepActivities();
  const streamCaps = { ...DEFAULT_STREAM_CAPS, ...opts.logStreams };
  const caps = new StreamCaps(streamCaps);
  const watches = new LogWatches({
    record,
    stepsDir: (id) => path.join(runDir(state.runsDir, id), 'steps'),
    stallMs: streamCaps.stallMs,
    ...(opts.say ? { say: opts.say } : {}),
  });
  const routes: Array<[string, RegExp, Handler]> = [
    ['GET', /^\/healthz$/, async (_q, res) => json(res, 200, { ok: true })],
    ['GET', /^\/metrics$/, async (_q, res) => metrics(res, state)],
    ['GET', /^\/api\/warm$/, async (_q, res) => json(res, 200, state.warm?.() ?? { gateways: 0, containers: 0, size: 0 })],
    [
      'GET',
      /^\/api\/pipelines$/,
      async (_q, res) => {
        const spent = await spentTodayByPipeline(state.runsDir, new Date());
        json(
          res,
          200,
          state.pipelines().map(({ budgetPerDayUsd, ...p }) => ({ ...p, today: { spentUsd: (p.name && spent.get(p.name)) || 0, budgetPerDayUsd } })),
        );
      },
    ],
    [
      'POST',
      new RegExp(`^/api/pipelines/${ID}/runs$`),
      async (req, res, [name]) => {
        const runId = await state.trigger(name!, await readInputs(req), { via: client(req), ...from(req) });
        if (runId) json(res, 202, { queued: true, pipeline: name, runId });
        else json(res, 404, { error: `no pipeline ${name} (GET /api/pipelines)` });
      },
    ],
    [
      'GET',
      /^\/api\/runs$/,
      async (_q, res, _p, url) => {
        const p = url.searchParams.get('pipeline');
        const s = url.searchParams.get('status');
        const limitText = url.searchParams.get('limit');
        const limit = limitText === null ? undefined : Number(limitText);
        if (limit !== undefined && !(Number.isInteger(limit) && limit > 0)) throw new RunnerError('bad_request', `limit takes a whole number above 0, got "${limitText}"`);
        const runs = await listRunsOf(state, { pipeline: p, status: s, whole: true, ...(limit !== undefined ? { limit } : {}) });
        json(res, 200, await Promise.all(runs.map((r) => withProject(state.runsDir, r))));
      },
    ],
    [
      'GET',
      new RegExp(`^/api/runs/${ID}$`),
      async (_q, res, [id]) => {
        const view = await runView(state, id!);
        json(res, 200, 'steps' in view && view.status === 'running' ? { ...view, activity: await activities.of(runDir(state.runsDir, id!), view) } : view);
      },
    ],
    [
      'GET',
      new RegExp(`^/api/runs/${ID}/log$`),
      async (req, res, [id]) => {
        // Decided before anything is read: a refused follower costs its answer, nothing more.
        const place = caps.admit(req.socket.remoteAddress ?? 'unknown');
        if (!place.ok) return refuse(res, place.status, place.message, place.retryAfter);
        res.once('close', place.release);
        await followLog(res, id!, record, watches);
      },
    ],
    [
      'GET',
      new RegExp(`^/api/runs/${ID}/diff$`),
      async (_q, res, [id], url) => (url.searchParams.has('file') ? sendFilePatch(res, state, id!, url.searchParams.get('file')!) : sendDiff(res, state, id!)),
    ],
    ['GET', new RegExp(`^/api/runs/${ID}/diff/files$`), async (_q, res, [id]) => json(res, 200, await diffFilesOf(state, id!))],
    ['GET', new RegExp(`^/api/runs/${ID}/delivery$`), async (_q, res, [id]) => json(res, 200, await previewDelivery(state, id!))],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/merge$`),
      async (req, res, [id]) => {
        const body = await readObject(req, ['into', 'squash', 'allowEmpty']);
        if (body.allowEmpty !== undefined && typeof body.allowEmpty !== 'boolean') throw new RunnerError('bad_request', '"allowEmpty" must be true or false');
        if (body.into !== undefined && typeof body.into !== 'string') throw new RunnerError('bad_request', '"into" must be a branch name');
        if (body.squash !== undefined && typeof body.squash !== 'boolean') throw new RunnerError('bad_request', '"squash" must be true or false');
        const r = await mergeRunOf(state, id!, { into: body.into as string | undefined, squash: body.squash === true, allowEmpty: body.allowEmpty === true }, deliverer(req));
        json(res, 200, { merged: true, runId: id, into: r.into, commit: r.commit, squash: body.squash === true, movedCheckout: r.movedCheckout, author: r.author });
      },
    ],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/apply$`),
      async (req, res, [id]) => {
        await readObject(req, []);
        const r = await applyRunOf(state, id!, deliverer(req));
        json(res, 200, { applied: true, runId: id, project: r.rec.project, files: r.files });
      },
    ],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/rerun$`),
      async (req, res, [id]) => {
        await readObject(req, []);
        const r = await rerunOf(state, id!, state.pipelines(), state.trigger, from(req));
        json(res, 202, { queued: true, runId: r.runId, pipeline: r.pipeline, rerunOf: id });
      },
    ],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/(approve|reject)$`),
      async (req, res, [id, what]) => {
        // a comment may be as long as a decision keeps (8000 characters, up to 6 bytes each as JSON)
        const body = await readObject(req, ['comment'], 64 * 1024);
        if (body.comment !== undefined && typeof body.comment !== 'string') throw new RunnerError('bad_request', '"comment" must be text');
        const r = await decideRunOf(state, id!, what === 'approve' ? 'approved' : 'rejected', { comment: (body.comment as string | undefined) ?? '', by: deliverer(req) });
        json(res, what === 'approve' ? 202 : 200, r);
      },
    ],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/resume$`),
      async (req, res, [id]) => {
        const body = await readObject(req, ['acceptChangedPipeline']);
        if (body.acceptChangedPipeline !== undefined && typeof body.acceptChangedPipeline !== 'boolean') throw new RunnerError('bad_request', '"acceptChangedPipeline" must be true or false');
        json(res, 202, await resumeRunOf(state, id!, { acceptChanged: body.acceptChangedPipeline === true, by: deliverer(req) }));
      },
    ],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/fork$`),
      async (req, res, [id]) => {
        const body = await readObject(req, ['from', 'inputs']);
        if (typeof body.from !== 'string') throw new RunnerError('bad_request', '"from" must name the step the new run begins at');
        const inputs = body.inputs ?? {};
        if (typeof inputs !== 'object' || Array.isArray(inputs) || Object.values(inputs as object).some((v) => typeof v !== 'string')) throw new RunnerError('bad_request', '"inputs" must be an object of text values');
        json(res, 202, await forkRunOf(state, id!, body.from, { inputs: inputs as Record<string, string>, by: deliverer(req) }));
      },
    ],
    [
      'POST',
      new RegExp(`^/api/runs/${ID}/cancel$`),
      async (_q, res, [id]) => {
        await cancelRunOf(state, id!);
        json(res, 202, { canceling: id });
      },
    ],
    ...(['POST', 'GET', 'DELETE'] as const).map((m): [string, RegExp, Handler] => [
      m,
      /^\/mcp$/,
      async (req, res) => {
        if (!opts.mcp) return json(res, 404, { error: 'this server offers no /mcp' });
        const { handleMcp } = await import('../mcp/http.js');
        await handleMcp(req, res, opts.mcp.backendFor(req), opts.mcp.version);
      },
    ]),
    ['POST', /^\/login$/, async (req, res) => login(req, res, token, dashboard)],
    ['POST', /^\/logout$/, async (_q, res) => redirect(res, token ? '/login' : '/', { 'set-cookie': LOGGED_OUT_COOKIE })],
  ];

  return http.createServer((req, res) => {
    let url: URL;
    try {
      url = new URL(req.url ?? '/', 'http://localhost');
    } catch {
      json(res, 400, { error: 'the request target is not a URL path' });
      return;
    }
    const verdict = checkAccess(req.method ?? 'GET', url.pathname, req.headers, token);
    if (!verdict.ok) {
      if (url.pathname === '/' && verdict.status === 401) redirect(res, '/login');
      else json(res, verdict.status, { error: verdict.message });
      return;
    }
    const asset = req.method === 'GET' ? dashboard.get(url.pathname) : undefined;
    if (asset) {
      send(res, 200, asset);
      return;
    }
    for (const [method, re, handler] of routes) {
      const m = re.exec(url.pathname);
      if (!m || req.method !== method) continue;
      handler(req, res, m.slice(1), url).catch((err) => {
        const code = err instanceof RunnerError ? err.code : '';
        const status =
          err instanceof DeliveryRefused
            ? 409
            : code === 'run_unknown' || code === 'no_diff' || code === 'pipeline_unknown' || code === 'not_cancelable'
              ? 404
              : ['not_waiting', 'already_decided', 'gate_timed_out', 'not_resumable', 'not_forkable', 'pipeline_changed'].includes(code)
                ? 409
              : code === 'outside_scope'
                ? 403
              : code === 'unsafe_name' || code === 'bad_request' || code === 'bad_input'
                ? 400
                : code === 'stopping'
                  ? 503
                  : 500;
        const body = err instanceof DeliveryRefused ? { error: errorMessage(err), code, details: err.details } : { error: errorMessage(err), ...(code ? { code } : {}) };
        if (!res.headersSent) json(res, status, body);
        else res.end();
      });
      return;
    }
    json(res, 404, { error: `no route ${req.method} ${url.pathname}` });
  });
}

function send(res: http.ServerResponse, status: number, asset: Asset, extra: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': asset.type, 'cache-control': 'no-store', ...SECURITY_HEADERS, ...extra });
  res.end(asset.body);
}

function redirect(res: http.ServerResponse, to: string, extra: Record<string, string> = {}): void {
  res.writeHead(303, { location: to, 'cache-control': 'no-store', ...extra });
  res.end();
}

async function login(req: http.IncomingMessage, res: http.ServerResponse, token: string | undefined, dashboard: Map<string, Asset>): Promise<void> {
  if (!token) return redirect(res, '/');
  const form = new URLSearchParams(await readBody(req, 4096));
  if (tokenMatches(form.get('token') ?? '', token)) return redirect(res, '/', { 'set-cookie': sessionCookie(token, Date.now(), req.headers) });
  send(res, 401, withLoginError(dashboard.get('/login')!, 'That token is not the one this server was started with.'));
}

async function readBody(req: http.IncomingMessage, limit: number): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > limit) throw new RunnerError('bad_request', `the request body is over ${limit} bytes`);
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Who is calling: the dashboard says so in a header; anyone else is "api". */
function client(req: http.IncomingMessage): 'dashboard' | 'api' {
  return req.headers['x-runner-client'] === 'dashboard' ? 'dashboard' : 'api';
}

/** The client's address, for the record. */
function from(req: http.IncomingMessage): { from?: string } {
  const a = req.socket.remoteAddress;
  return a ? { from: a } : {};
}

function deliverer(req: http.IncomingMessage): DeliveredBy {
  return { via: client(req), ...from(req) };
}

/** A small JSON object body (or none: {}), with only the keys named: a misspelt option is a 400, never ignored. */
async function readObject(req: http.IncomingMessage, keys: string[], limit = 4096): Promise<Record<string, unknown>> {
  const text = await readBody(req, limit);
  if (!text.trim()) return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new RunnerError('bad_request', `the body is not JSON: send ${keys.length ? `an object with ${keys.map((k) => `"${k}"`).join(' or ')}` : '{}'} or nothing`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new RunnerError('bad_request', 'the body must be a JSON object');
  const unknown = Object.keys(body).filter((k) => !keys.includes(k));
  if (unknown.length) throw new RunnerError('bad_request', `the body has ${unknown.map((k) => JSON.stringify(k)).join(', ')}, which this route does not take${keys.length ? ` (it takes ${keys.join(', ')})` : ''}`);
  return body as Record<string, unknown>;
}

/** The trigger's optional body: {"inputs": {"name": "value"}}, values strings (numbers and booleans are taken as text). */
async function readInputs(req: http.IncomingMessage): Promise<Record<string, string>> {
  const text = await readBody(req, 64 * 1024);
  if (!text.trim()) return {};
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    throw new RunnerError('bad_request', 'the body is not JSON: send {"inputs": {"name": "value"}} or nothing');
  }
  const inputs = (body as { inputs?: unknown } | null)?.inputs ?? {};
  if (typeof inputs !== 'object' || inputs === null || Array.isArray(inputs)) throw new RunnerError('bad_request', '"inputs" must be an object of names to values');
  return Object.fromEntries(
    Object.entries(inputs).map(([k, v]) => {
      if (!['string', 'number', 'boolean'].includes(typeof v)) throw new RunnerError('bad_request', `input ${k} must be a string, number or boolean`);
      return [k, String(v)];
    }),
  );
}

async function sendDiff(res: http.ServerResponse, door: Door, runId: string): Promise<void> {
  const { file, size } = await patchOf(door, runId);
  res.writeHead(200, { 'content-type': 'text/x-diff; charset=utf-8', 'content-length': size, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  await pipe(createReadStream(file), res);
}

async function sendFilePatch(res: http.ServerResponse, door: Door, runId: string, name: string): Promise<void> {
  const part = await filePatchOf(door, runId, name);
  res.writeHead(200, { 'content-type': 'text/x-diff; charset=utf-8', 'content-length': part.size, 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' });
  await pipe(createReadStream(part.file, { start: part.start, end: part.end }), res);
}

/** A run as the list shows it (runListing), with its project: the dashboard groups the recent runs by it. A run this server holds says its project from its queued record. */
async function withProject(runsDir: string, r: RunRecord | NotStarted): Promise<Record<string, unknown>> {
  if ('steps' in r) return runListing(r);
  const queued = await readRun(runsDir, r.runId).catch(() => undefined);
  return queued?.project ? { ...r, project: queued.project } : { ...r };
}

function json(res: http.ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
  res.end(`${JSON.stringify(body)}\n`);
}

/**
 * The run's log as Server-Sent Events until the run ends. A run still queued
 * or starting is waited for; a comment line every 15 s keeps proxies from
 * closing a quiet stream. The run's one watcher reads the record and the log
 * (log-watch.ts); this follower is written to at the pace it reads.
 */
async function followLog(res: http.ServerResponse, runId: string, record: (id: string) => Promise<RunRecord | NotStarted>, watches: LogWatches): Promise<void> {
  const first = await record(runId); // 404 for an unknown run, before the stream starts
  if (first.status === 'not_started' && 'steps' in first) {
    throw new RunnerError('run_unknown', `run ${runId} never started, so it has no log: ${first.error?.message ?? 'it did not start'}`);
  }
  res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive' });
  res.flushHeaders();
  await watches.follow(runId, res);
}

/** A refusal that says what happened and when to ask again; the connection closes with it. */
function refuse(res: http.ServerResponse, status: number, message: string, retryAfter: number): void {
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', 'retry-after': String(retryAfter), connection: 'close' });
  res.end(`${JSON.stringify({ error: message })}\n`);
}

async function metrics(res: http.ServerResponse, state: ServeState): Promise<void> {
  // the runs of the projects this server serves (runs/scope.ts), as GET /api/runs lists them: another project's pipelines, counts and costs are not its to tell
  const served = await servedBy(state.scope);
  const runs: RunRecord[] = [];
  for (const r of await listRuns(state.runsDir)) if (await served(r.project)) runs.push(r);
  const byStatus = new Map<string, number>();
  const durations = new Map<string, { sum: number; count: number }>();
  for (const r of runs) {
    byStatus.set(r.status, (byStatus.get(r.status) ?? 0) + 1);
    const d = durations.get(r.pipeline) ?? { sum: 0, count: 0 };
    for (const s of r.steps) if (s.status !== 'skipped') (d.sum += s.durationMs / 1000), d.count++;
    durations.set(r.pipeline, d);
  }
  const agents = sumUsage(runs);
  const lines = [
    '# HELP runner_runs Runs recorded in the runner home, by status.',
    '# TYPE runner_runs gauge',
    ...[...byStatus].map(([s, n]) => `runner_runs{status="${s}"} ${n}`),
    '# HELP runner_step_duration_seconds Time steps took, by pipeline.',
    '# TYPE runner_step_duration_seconds summary',
    ...[...durations].flatMap(([p, d]) => [`runner_step_duration_seconds_sum{pipeline="${p}"} ${d.sum}`, `runner_step_duration_seconds_count{pipeline="${p}"} ${d.count}`]),
    '# HELP runner_agent_tokens_total Tokens agent steps used, by pipeline, agent and direction (what the agent CLIs reported).',
    '# TYPE runner_agent_tokens_total counter',
    ...[...agents.values()].flatMap((a) => [
      `runner_agent_tokens_total{pipeline="${a.pipeline}",agent="${a.agent}",direction="input"} ${a.input}`,
      `runner_agent_tokens_total{pipeline="${a.pipeline}",agent="${a.agent}",direction="output"} ${a.output}`,
    ]),
    '# HELP runner_agent_cost_usd_total What agent steps cost in US dollars, by pipeline and agent, as the agent CLIs computed it.',
    '# TYPE runner_agent_cost_usd_total counter',
    ...[...agents.values()].map((a) => `runner_agent_cost_usd_total{pipeline="${a.pipeline}",agent="${a.agent}"} ${a.cost}`),
    '# HELP runner_queue_length Runs waiting to start.',
    '# TYPE runner_queue_length gauge',
    `runner_queue_length ${state.queueLength()}`,
    '# HELP runner_warm_gateways Step gateways made ahead and waiting for a step (runner serve --warm).',
    '# TYPE runner_warm_gateways gauge',
    `runner_warm_gateways ${state.warm?.().gateways ?? 0}`,
    '# HELP runner_warm_step_containers Warm gateways with the step\'s container made beside them, waiting too (runner serve --warm, local engine).',
    '# TYPE runner_warm_step_containers gauge',
    `runner_warm_step_containers ${state.warm?.().containers ?? 0}`,
  ];
  res.writeHead(200, { 'content-type': 'text/plain; version=0.0.4; charset=utf-8' });
  res.end(`${lines.join('\n')}\n`);
}
