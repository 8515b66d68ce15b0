/**
 * `runner mcp [--home DIR] [--pipelines DIR]... [--project DIR]... [--agent-base-url URL] [--warm N]` and the run settings
 * exec and serve take (src/settings/flags.ts): the runner as MCP tools over stdio, for an interactive agent
 * (Claude Code, Codex) to hand work to sandboxed runs. stdout carries the protocol only: anything else the
 * runner would print there goes to stderr.
 */
import { warmPool } from '../run/warm/warm-pool.js';
import { createWriteStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { UsageError } from '../common/errors.js';
import { packageRoot } from '../common/package-root.js';
import { visible } from '../common/visible.js';
import { openEngine, useEngine } from '../container/engine.js';
import { Git } from '../git/git.js';
import { realFolders } from '../runs/folders.js';
import { RunHolder } from '../runs/holder.js';
import { listPipelineFiles, pipelineProjects } from '../runs/pipeline-list.js';
import { projectScope } from '../runs/scope.js';
import { createMcpServer } from '../mcp/server.js';
import { readSecretsFile, secretsFileModeProblem } from '../run/secrets-file.js';
import { SETTINGS_FLAGS } from '../settings/flags.js';
import { readSettings } from '../settings/run-settings.js';
import { parseFlags } from './args.js';
import { ConsoleReporter } from './console-reporter.js';
import { openHome } from './context.js';
import { cliActor } from './os-user.js';
import { parseWarm } from './warm-flag.js';

/** At most this many runs at once: a client (a model a prompt may steer) cannot start containers without end. */
export const MAX_RUNS = 8;

export async function mcpCommand(args: string[]): Promise<number> {
  const { values } = parseFlags(
    'mcp',
    args,
    {
      home: { type: 'string' },
      pipelines: { type: 'string', multiple: true, default: [] },
      project: { type: 'string', multiple: true, default: [] },
      'agent-base-url': { type: 'string' },
      warm: { type: 'string' },
      ...SETTINGS_FLAGS,
    },
    [],
  );
  const pipelineDirs = await realFolders(values.pipelines ?? [], '--pipelines');
  const projectDirs = await realFolders(values.project ?? [], '--project');
  if (!pipelineDirs.length && !projectDirs.length) throw new UsageError('mcp: give --pipelines DIR (pipelines it may run) or --project DIR (projects agent tasks may work on), or both (runner --help)');
  const baseUrl = values['agent-base-url'];
  if (baseUrl !== undefined && !/^https?:\/\/[^\s'"\\$`]+$/.test(baseUrl)) throw new UsageError(`mcp: --agent-base-url takes an http or https URL, got "${baseUrl}"`);
  const warm = parseWarm('mcp', values.warm ?? process.env.RUNNER_WARM);
  const say = (m: string) => process.stderr.write(`runner mcp: ${visible(m)}\n`);
  // The same settings as exec and serve, from the same flags and variables; every run this server starts gets them.
  const settings = { ...readSettings(values, process.env, (m) => say(`warning: ${m}`)), secretsFromEnvironment: false };
  // --engine podman: every engine client of this command talks to Podman, its recovery of earlier runs too
  useEngine(settings.engine.name);
  // Secrets come from this file alone, never from a tool argument nor from the client's environment.
  const { secretsFile } = settings;
  if (secretsFile) await readSecretsFile(secretsFile);
  const loose = secretsFile ? await secretsFileModeProblem(secretsFile) : undefined;
  if (loose) say(`warning: ${loose}`);

  // The protocol has stdout to itself: whatever else would print there (a library, a reporter) goes to stderr.
  const protocolOut = createWriteStream('', { fd: 1 });
  process.stdout.write = process.stderr.write.bind(process.stderr) as typeof process.stdout.write;

  const home = await openHome(values.home, { quiet: true });
  const { runtime, transport } = openEngine(settings.engine.name, settings.engine);
  // gateways made ahead for its runs' steps (gateway-pool.ts), as serve's, where the engine's steps have theirs
  const pool = warm ? warmPool({ runtime, transport }, { size: warm, home: home.root, settings, onProblem: say, command: 'mcp' }) : undefined;
  await pool?.start();
  const runs = new RunHolder(home, {
    door: 'runner mcp',
    runtime,
    ...(pool ? { warmGateways: pool } : {}),
    maxLive: MAX_RUNS,
    settings,
    ...(transport ? { transport } : {}),
    makeGit: (who) => new Git(who),
    secrets: async () => (secretsFile ? readSecretsFile(secretsFile) : {}),
    say,
    reporterFor: (name) => {
      const prefixed = { write: (s: string) => process.stderr.write(s.replace(/^(?=.)/gm, `[${name}] `)) };
      return new ConsoleReporter(prefixed, prefixed, false);
    },
  });
  const pkg = JSON.parse(await readFile(path.join(packageRoot(), 'package.json'), 'utf8')) as { version: string };
  const me = cliActor();
  const server = createMcpServer(
    {
      home: home.root,
      runsDir: home.runs,
      // What runner mcp serves (runs/scope.ts): the projects of the pipelines under --pipelines and every project under --project.
      scope: projectScope({
        pipelineProjects: () => pipelineProjects(pipelineDirs),
        folders: projectDirs,
        says: `runner mcp serves the projects of the pipelines under ${pipelineDirs.length ? `--pipelines ${pipelineDirs.join(', ')}` : 'its --pipelines folders (it has none)'} and the projects under ${projectDirs.length ? `--project ${projectDirs.join(', ')}` : 'its --project folders (it has none)'}`,
      }),
      pipelineDirs,
      projectDirs,
      pipelines: () => listPipelineFiles(pipelineDirs),
      start: (loaded, inputs, startedBy) => runs.start(loaded, inputs, startedBy),
      cancel: (id) => runs.cancel(id),
      continueRun: (prepared, startedBy) => runs.continueRun(prepared, startedBy),
      notStarted: (id) => runs.notStarted(id),
      active: () => runs.active(),
      startedBy: { via: 'mcp', ...(me.user ? { user: me.user } : {}) },
      deliveredBy: { via: 'mcp', ...(me.user ? { user: me.user } : {}) },
      ...(baseUrl ? { agentBaseUrl: baseUrl } : {}),
    },
    pkg.version,
  );

  const stdio = new StdioServerTransport(process.stdin, protocolOut);
  const ended = new Promise<'closed' | NodeJS.Signals>((resolve) => {
    stdio.onclose = () => resolve('closed');
    process.stdin.once('end', () => resolve('closed'));
    for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.once(sig, () => resolve(sig));
  });
  await server.connect(stdio);
  say(`serving ${home.root} over stdio: pipelines under ${pipelineDirs.join(', ') || '(none)'}; projects under ${projectDirs.join(', ') || '(none)'}`);
  const why = await ended;
  // The client went away: its runs end on their own (their timeouts bound them). A signal: they are canceled now, their work committed.
  if (runs.active().length) say(why === 'closed' ? 'the client closed: waiting for the runs it started to end' : `${why}: canceling the runs this server started`);
  await runs.stop(why === 'closed' ? 24 * 3600_000 : 0);
  await pool?.close();
  await server.close().catch(() => undefined);
  return 0;
}
