/**
 * `runner serve --pipelines DIR [--home DIR] [--max-concurrent N] [--grace 30s] [--listen H:P] [--warm N]
 *  [--max-log-streams N] [--max-log-streams-per-client N] [--log-stall 60s] [--project DIR]...` and the run settings
 * (src/settings/flags.ts).
 * --project: the projects /mcp's agent tasks may work on.
 */
import { visible } from '../common/visible.js';
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parseDuration } from '../common/durations.js';
import { UsageError } from '../common/errors.js';
import { packageRoot } from '../common/package-root.js';
import { realFolders } from '../runs/folders.js';
import { openEngine, useEngine } from '../container/engine.js';
import { Git } from '../git/git.js';
import { readSecretsFile, secretsFileModeProblem } from '../run/secrets-file.js';
import { serve } from '../serve/serve.js';
import { DEFAULT_STREAM_CAPS } from '../serve/stream-caps.js';
import { canonicalHome } from '../workspace/home.js';
import { parseFlags } from './args.js';
import { parseWarm } from './warm-flag.js';
import { SETTINGS_FLAGS } from '../settings/flags.js';
import { readSettings } from '../settings/run-settings.js';
import { onClosedPipe } from './closed-pipe.js';
import { ConsoleReporter } from './console-reporter.js';

export async function serveCommand(args: string[]): Promise<number> {
  const { values } = parseFlags(
    'serve',
    args,
    {
      pipelines: { type: 'string' },
      home: { type: 'string' },
      'max-concurrent': { type: 'string' },
      grace: { type: 'string', default: '30s' },
      listen: { type: 'string', default: '127.0.0.1:7700' },
      ...SETTINGS_FLAGS,
      'max-log-streams': { type: 'string' },
      'max-log-streams-per-client': { type: 'string' },
      'log-stall': { type: 'string' },
      project: { type: 'string', multiple: true, default: [] },
      warm: { type: 'string' },
    },
    [],
  );
  if (!values.pipelines) throw new UsageError('serve: --pipelines DIR is required (runner --help)');
  const say = (m: string) => process.stderr.write(`runner serve: ${visible(m)}\n`);
  const settings = readSettings(values, process.env, (m) => say(`warning: ${m}`));
  // --engine podman: every engine client of this command talks to Podman, its recovery of earlier runs too
  useEngine(settings.engine.name);
  const maxConcurrent = values['max-concurrent'] ? Number(values['max-concurrent']) : os.availableParallelism();
  if (!Number.isInteger(maxConcurrent) || maxConcurrent < 1) throw new UsageError('serve: --max-concurrent takes a whole number of runs, at least 1');
  const warm = parseWarm('serve', values.warm ?? process.env.RUNNER_WARM);
  const graceMs = parseDuration(values.grace ?? '30s');
  if (graceMs === undefined) throw new UsageError(`serve: --grace takes a duration like 30s, got "${values.grace}"`);

  const logStreams = {
    total: count(values['max-log-streams'], DEFAULT_STREAM_CAPS.total, '--max-log-streams', 'live logs streamed at once'),
    perClient: count(values['max-log-streams-per-client'], DEFAULT_STREAM_CAPS.perClient, '--max-log-streams-per-client', 'live logs streamed at once to one address'),
    stallMs: values['log-stall'] === undefined ? DEFAULT_STREAM_CAPS.stallMs : parseDuration(values['log-stall']),
  };
  if (logStreams.stallMs === undefined || logStreams.stallMs < 1000) throw new UsageError(`serve: --log-stall takes a duration of at least 1s, like 60s, got "${values['log-stall']}"`);

  // /mcp's agent tasks work only on projects under these (real paths)
  const projects = await realFolders(values.project ?? [], '--project');
  const pkg = JSON.parse(await readFile(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  const listen = parseListen(values.listen ?? '127.0.0.1:7700');
  const token = process.env.RUNNER_TOKEN || undefined;
  if (!isLoopback(listen.host) && !token) {
    throw new UsageError(`serve: listening on ${listen.host} (not loopback) needs a token: set RUNNER_TOKEN, or listen on 127.0.0.1`);
  }

  // Read now (a wrong path fails the start), then again as each run starts: a changed file applies to the next run.
  const { secretsFile } = settings;
  if (secretsFile) await readSecretsFile(secretsFile);
  const secrets = async () => ({ ...process.env, ...(secretsFile ? await readSecretsFile(secretsFile) : {}) });

  const { runtime, transport } = openEngine(settings.engine.name, settings.engine);
  await runtime.ping();
  const stop = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    say(`${sig}`);
    stop.abort();
  };
  for (const sig of ['SIGINT', 'SIGTERM'] as const) process.on(sig, onSignal);
  // its console closed (runner serve | head): it stops as on SIGTERM, its runs given their grace
  onClosedPipe(() => onSignal('SIGPIPE'));
  const loose = secretsFile ? await secretsFileModeProblem(secretsFile, process.env.RUNNER_IN_IMAGE === '1' ? 'the file RUNNER_SECRETS names, on the host' : undefined) : undefined;
  if (loose) say(`warning: ${loose}`);
  await serve(
    {
      pipelinesDir: path.resolve(values.pipelines),
      home: await canonicalHome(values.home),
      maxConcurrent,
      graceMs,
      stop: stop.signal,
      say,
      listen,
      logStreams: { ...logStreams, stallMs: logStreams.stallMs },
      secrets,
      settings,
      ...(token ? { token } : {}),
      projects,
      version: pkg.version,
      ...(warm ? { warm } : {}),
      reporterFor: (name) => {
        const prefixed = { write: (s: string) => process.stderr.write(s.replace(/^(?=.)/gm, `[${name}] `)) };
        return new ConsoleReporter(prefixed, prefixed, false);
      },
    },
    { runtime, transport, makeGit: (who) => new Git(who) },
  );
  say('stopped');
  return 0;
}

function count(text: string | undefined, fallback: number, flag: string, what: string): number {
  if (text === undefined) return fallback;
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`serve: ${flag} takes a whole number of ${what}, at least 1, got "${text}"`);
  return n;
}

function parseListen(text: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]+)):(\d+)$/.exec(text);
  if (!m) throw new UsageError(`serve: --listen takes HOST:PORT, like 127.0.0.1:7700, got "${text}"`);
  return { host: m[1] ?? m[2]!, port: Number(m[3]) };
}

function isLoopback(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}
