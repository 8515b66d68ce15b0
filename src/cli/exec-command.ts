/** `runner exec FILE [--json] [--home DIR] [--keep-workspace] [--input NAME=VALUE]... [--task ID [--title T]] [--no-wait] [--no-wait-at-gate] [--warm N]` and the run settings (src/settings/flags.ts); the run itself: foreground.ts */
import { UsageError } from '../common/errors.js';
import { parseInputFlags, resolveInputs } from '../pipeline/inputs.js';
import { loadPipeline } from '../pipeline/load.js';
import { SETTINGS_FLAGS } from '../settings/flags.js';
import { useEngine } from '../container/engine.js';
import { readSettings } from '../settings/run-settings.js';
import { checkTaskId } from '../workspace/task-worktree.js';
import { parseFlags } from './args.js';
import { parseWarm } from './warm-flag.js';
import { openHome } from './context.js';
import { orJsonError, runForeground } from './foreground.js';
import { cliActor } from './os-user.js';

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
      'no-wait-at-gate': { type: 'boolean', default: false },
      warm: { type: 'string' },
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
  // --engine podman: every engine client of this command talks to Podman, its recovery of earlier runs too
  useEngine(settings.engine.name);
  const warm = await orJsonError(json, async () => parseWarm('exec', values.warm ?? process.env.RUNNER_WARM));
  // Runs a crashed runner left behind are recovered first (a home that does not exist yet is left alone).
  const home = (await openHome(values.home, { create: false })).root;
  return runForeground({ home, settings, json, early, waitAtGate: values['no-wait-at-gate'] !== true, ...(warm ? { warm } : {}) }, loaded, {
    keepWorkspace: values['keep-workspace'] === true,
    noWait: values['no-wait'] === true,
    inputs,
    startedBy: cliActor(),
    ...(values.task !== undefined ? { task: { id: values.task, ...(values.title !== undefined ? { title: values.title } : {}) } } : {}),
  });
}
