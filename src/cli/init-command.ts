/**
 * `runner init [DIR] [--agent claude-code|codex] [--file NAME] [--no-try] [--home DIR]`
 * and the run settings: looks at the project and writes a starter pipeline (an
 * agent step, and a verify step with the project's own install and test
 * commands in runner/toolchain). In a git repository it first tries those
 * checks once on the current commit, in the runner's own sandbox (a run of
 * its own: init/try-checks.ts), and leaves out, with a comment saying why, a
 * check that already fails there. It never overwrites a file.
 */
import { existsSync } from 'node:fs';
import { readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, UsageError } from '../common/errors.js';
import { detect, DEVCONTAINER_FILES, TEST_REQUIREMENT_FILES, type Detected } from '../init/detect.js';
import { schemaTakesDevcontainer } from '../init/devcontainer-image.js';
import { starterPipeline, type StarterFacts } from '../init/starter.js';
import { checksOf, judgeTrial } from '../init/trial.js';
import { tryChecks } from '../init/try-checks.js';
import { SETTINGS_FLAGS, type SettingsFlags } from '../settings/flags.js';
import { readSettings } from '../settings/run-settings.js';
import { safeName } from '../workspace/names.js';
import { parseFlags } from './args.js';
import { ConsoleReporter } from './console-reporter.js';
import { openHome } from './context.js';
import { cliActor } from './os-user.js';

export async function initCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    'init',
    args,
    { agent: { type: 'string', default: 'claude-code' }, file: { type: 'string', default: 'runner.yaml' }, 'no-try': { type: 'boolean', default: false }, home: { type: 'string' }, ...SETTINGS_FLAGS },
    'any',
  );
  if (positionals.length > 1) throw new UsageError('init: expected at most one DIR (runner --help)');
  const agent = values.agent;
  if (agent !== 'claude-code' && agent !== 'codex') throw new UsageError(`init: --agent takes claude-code or codex, got "${agent}"`);
  const dir = path.resolve(positionals[0] ?? '.');
  if (!(await stat(dir).catch(() => undefined))?.isDirectory()) throw new UsageError(`init: ${dir} is not a directory`);
  const target = path.resolve(dir, values.file ?? 'runner.yaml');
  if (existsSync(target)) throw new UsageError(`init: ${target} exists and is left as it is: remove it, or name another file with --file`);
  const read = (n: string) => readFile(path.join(dir, n), 'utf8').catch(() => undefined);
  const names = await readdir(dir);
  const testRequirements = TEST_REQUIREMENT_FILES.filter((f) => existsSync(path.join(dir, f)));
  const detected = detect({
    names,
    testRequirements,
    ...(names.includes('package.json') ? { packageJson: (await read('package.json')) ?? '' } : {}),
    ...(names.includes('pyproject.toml') ? { pyproject: (await read('pyproject.toml')) ?? '' } : {}),
    ...(names.includes('Makefile') ? { makefile: (await read('Makefile')) ?? '' } : {}),
    devcontainerFiles: DEVCONTAINER_FILES.filter((f) => existsSync(path.join(dir, f))),
  });
  let name = 'project';
  try {
    name = safeName(path.basename(dir), 'pipeline name');
  } catch {
    // a folder name that is no name: the starter is called "project"
  }
  const git = existsSync(path.join(dir, '.git'));
  const devcontainerImage = schemaTakesDevcontainer();
  const trial = await trialOf(dir, detected, git, devcontainerImage && detected.devcontainer !== undefined, values);
  const text = starterPipeline({ name, projectPath: path.relative(path.dirname(target), dir) || '.', fileName: path.basename(target), agent, git, detected, trial, devcontainerImage });
  await writeFile(target, text, { flag: 'wx' });
  const leftOut = trial && 'leftOut' in trial ? trial.leftOut : [];
  const verifiedBy = checksOf(detected).filter((c) => !leftOut.some((l) => l.check.command === c.command));
  process.stdout.write(
    `wrote ${target}: ${detected.ecosystem === 'unknown' ? 'no ecosystem found' : `a ${detected.ecosystem} project`}` +
      `${verifiedBy.length ? `, verified by ${verifiedBy.map((c) => c.command).join(' and ')}` : detected.test ? '' : ', no test command found'}` +
      `${leftOut.length ? ` (left out, failing before any change: ${leftOut.map((l) => l.check.command).join(', ')}; the file says why)` : ''}; give the agent its task and run: ` +
      `runner exec ${shownPath(target)} --input task="..." (or commit a TASK.md and leave --input out)\n`,
  );
  return 0;
}

/**
 * Tries the checks the starter proposes on the project's current commit (a run in the runner's sandbox, its
 * output shown): what the starter keeps and leaves out. Not tried with --no-try, outside a git repository (the
 * trial would work in the folder itself), or without checks; a trial that cannot run is said, and keeps them all.
 */
async function trialOf(dir: string, detected: Detected, git: boolean, devcontainer: boolean, values: SettingsFlags & { 'no-try'?: boolean; home?: string }): Promise<StarterFacts['trial']> {
  if (!checksOf(detected).length) return undefined;
  if (values['no-try']) return { notTried: '--no-try' };
  if (!git) return { notTried: 'not a git repository: a trial would work in the folder itself' };
  const early: string[] = [];
  const settings = readSettings(values, process.env, (m) => early.push(m));
  const home = (await openHome(values.home, { create: false })).root;
  const reporter = new ConsoleReporter(process.stderr, process.stderr, process.stderr.isTTY === true && !process.env.CI);
  for (const m of early) reporter.warn(m);
  reporter.info(`trying ${checksOf(detected).map((c) => c.command).join(' and ')} on the project's current commit, in the runner's sandbox${devcontainer ? ` (in its dev container, ${detected.devcontainer})` : ''}, before proposing ${checksOf(detected).length === 1 ? 'it' : 'them'} (--no-try skips this)`);
  const cancel = new AbortController();
  const kill = new AbortController();
  const onSignal = () => (cancel.signal.aborted ? kill.abort() : cancel.abort());
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const outcome = await tryChecks({ dir, detected, devcontainer, home, settings, reporter, startedBy: cliActor(), signal: cancel.signal, killSignal: kill.signal });
    const verdict = judgeTrial(detected, outcome, values.home ? { home } : {});
    for (const l of verdict.leftOut) reporter.warn(l.comment);
    for (const n of verdict.notes) reporter.warn(n);
    return verdict;
  } catch (err) {
    if (cancel.signal.aborted) throw err;
    const why = errorMessage(err);
    reporter.warn(`the checks could not be tried, so the starter keeps them all: ${why} (runner init --no-try skips the trial)`);
    return { notTried: `the trial could not run: ${why}` };
  } finally {
    reporter.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}

/** The starter's path as the user types it: relative to here when it is below here, else absolute. */
function shownPath(target: string): string {
  const rel = path.relative(process.cwd(), target);
  return rel && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : target;
}
