/** `runner exec FILE [--json] [--home DIR] [--keep-workspace] [--input NAME=VALUE]... [--task ID [--title T]] [--no-wait]` and the run settings (src/settings/flags.ts) */
import { errorMessage, RunnerError, UsageError } from '../common/errors.js';
import { openEngine } from '../container/engine.js';
import { Git } from '../git/git.js';
import { parseInputFlags, resolveInputs } from '../pipeline/inputs.js';
import { loadPipeline } from '../pipeline/load.js';
import { executeRun } from '../run/orchestrator.js';
import { cliActor } from './os-user.js';
import { summarize } from '../run/record.js';
import { readSecretsFile } from '../run/secrets-file.js';
import { SETTINGS_FLAGS } from '../settings/flags.js';
import { readSettings } from '../settings/run-settings.js';
import { checkTaskId } from '../workspace/task-worktree.js';
import { parseFlags } from './args.js';
import { onClosedPipe } from './closed-pipe.js';
import { openHome } from './context.js';
import { ConsoleReporter } from './console-reporter.js';
import { exitCodeForRun } from './exit-codes.js';

export async function execCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    'exec',
    args,
    {
      json: { type: 'boolean', default: false },
      home: { type: 'string' },
      'keep-workspace': { type: 'boolean', default: false },
      input: { type: 'string', multiple: true, default: [] },
      task: { type: 'string' },
      title: { type: 'string' },
      'no-wait': { type: 'boolean', default: false },
      ...SETTINGS_FLAGS,
    },
    ['FILE'],
  );
  if (values.title !== undefined && values.task === undefined) throw new UsageError('exec: --title goes with --task (runner --help)');
  if (values.task !== undefined) checkTaskId(values.task);
  const loaded = await loadPipeline(positionals[0]!);
  const json = values.json === true;
  const inputs = parseInputFlags(values.input ?? []);
  resolveInputs(loaded.pipeline, inputs); // a wrong name or a missing value is said before anything starts
  // The settings' warnings wait for the reporter; their errors come before anything starts (with --json, as its one object).
  const early: string[] = [];
  const settings = await orJsonError(json, async () => readSettings(values, process.env, (m) => early.push(m)));
  const fromFile = settings.secretsFile ? await readSecretsFile(settings.secretsFile) : {};

  // Runs a crashed runner left behind are recovered first (a home that does not exist yet is left alone).
  const home = (await openHome(values.home, { create: false })).root;
  const stepOut = json ? process.stderr : process.stdout;
  const live = !json && process.stderr.isTTY === true && !process.env.CI;
  const reporter = new ConsoleReporter(stepOut, process.stderr, live);
  for (const m of early) reporter.warn(m);

  const cancel = new AbortController();
  const kill = new AbortController();
  const onSignal = (sig: NodeJS.Signals) => {
    if (!cancel.signal.aborted) {
      reporter.warn(`${sig}: canceling; the step is stopped, its work committed, the worktree removed (again to kill at once)`);
      cancel.abort();
    } else if (!kill.signal.aborted) {
      reporter.warn(`${sig} again: killing the step's container now`);
      kill.abort();
    }
  };
  const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
  for (const sig of signals) process.on(sig, onSignal);
  // its output closed (runner exec p.yaml | head -1): the run is canceled as on SIGPIPE, its work committed
  const offClosedPipe = onClosedPipe(() => onSignal('SIGPIPE'));
  try {
    const engine = openEngine(settings.engine.name, settings.engine);
    const record = await orJsonError(json, () => executeRun(
      {
        ...engine,
        makeGit: (who) => new Git(who),
        clock: () => new Date(),
        reporter,
        signal: cancel.signal,
        killSignal: kill.signal,
      },
      {
        loaded,
        home,
        keepWorkspace: values['keep-workspace'] === true,
        // The file wins over the environment; only the names the pipeline declares are read.
        secretSource: { ...process.env, ...fromFile },
        noWait: values['no-wait'] === true,
        inputs,
        startedBy: cliActor(),
        settings,
        ...(values.task !== undefined ? { task: { id: values.task, ...(values.title !== undefined ? { title: values.title } : {}) } } : {}),
      },
    ));
    reporter.close();
    if (json) process.stdout.write(`${JSON.stringify(summarize(record))}\n`);
    return exitCodeForRun(record.status, record.error?.code);
  } finally {
    reporter.close();
    for (const sig of signals) process.off(sig, onSignal);
    offClosedPipe();
  }
}

/** With --json, a run that cannot start (its settings, its engine) still prints one object: its error. */
async function orJsonError<T>(json: boolean, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (json) {
      const code = err instanceof RunnerError ? err.code : 'internal';
      process.stdout.write(`${JSON.stringify({ runId: null, status: 'error', error: { code, message: errorMessage(err) } })}\n`);
    }
    throw err;
  }
}
