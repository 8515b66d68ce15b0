/**
 * `runner approve RUN [--comment T]`, `runner reject RUN [--comment T]`,
 * `runner resume RUN [--pipeline F]`, `runner fork RUN --from STEP [--pipeline F]
 * [--input K=V]...`: each translates to one operation of src/runs/ (decide.ts,
 * resume.ts) and, for a run that goes on, runs it here in the foreground
 * (foreground.ts), as runner exec would. An approval a waiting runner exec
 * takes is left to it.
 */
import { parseInputFlags } from '../pipeline/inputs.js';
import { gateWaiterAlive } from '../run/gate-waiter.js';
import { SETTINGS_FLAGS } from '../settings/flags.js';
import { useEngine } from '../container/engine.js';
import { readSettings } from '../settings/run-settings.js';
import { decideGate } from '../runs/decide.js';
import { cliDoor } from '../runs/door.js';
import { prepareFork, prepareResume, type Prepared } from '../runs/resume.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';
import { orJsonError, runForeground } from './foreground.js';
import { cliActor } from './os-user.js';

const RUN_FLAGS = { json: { type: 'boolean', default: false }, home: { type: 'string' }, 'no-wait-at-gate': { type: 'boolean', default: false }, ...SETTINGS_FLAGS } as const;

export async function approveCommand(args: string[]): Promise<number> {
  return decide('approve', args);
}

export async function rejectCommand(args: string[]): Promise<number> {
  return decide('reject', args);
}

async function decide(what: 'approve' | 'reject', args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(what, args, { ...RUN_FLAGS, comment: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home);
  const runId = positionals[0]!;
  const d = await decideGate(cliDoor(home), runId, what === 'approve' ? 'approved' : 'rejected', { comment: values.comment ?? '', by: cliActor() });
  if (d.decision === 'rejected') {
    process.stdout.write(`run ${runId}: gate ${d.step} rejected; the run ended rejected, its work kept${d.record.branch ? ` on ${d.record.branch}` : ''}\n`);
    return 0;
  }
  if (await gateWaiterAlive(home.root, runId)) {
    process.stdout.write(`run ${runId}: gate ${d.step} approved; it goes on in the runner exec waiting for it\n`);
    return 0;
  }
  process.stdout.write(`run ${runId}: gate ${d.step} approved; going on here\n`);
  return goOn(values, home.root, await prepareResume(cliDoor(home), runId, { how: 'approval', by: cliActor() }));
}

export async function resumeCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('resume', args, { ...RUN_FLAGS, pipeline: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home);
  const prepared = await prepareResume(cliDoor(home), positionals[0]!, { ...(values.pipeline !== undefined ? { pipelineFile: values.pipeline } : {}), by: cliActor() });
  return goOn(values, home.root, prepared);
}

export async function forkCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('fork', args, { ...RUN_FLAGS, from: { type: 'string' }, pipeline: { type: 'string' }, input: { type: 'string', multiple: true, default: [] } }, ['RUN_ID']);
  if (values.from === undefined) throw new (await import('../common/errors.js')).UsageError('fork: --from STEP says which step the new run begins at (runner runs show RUN lists its steps)');
  const home = await openHome(values.home);
  const prepared = await prepareFork(cliDoor(home), positionals[0]!, values.from, {
    ...(values.pipeline !== undefined ? { pipelineFile: values.pipeline } : {}),
    inputs: parseInputFlags(values.input ?? []),
    by: cliActor(),
  });
  return goOn(values, home.root, prepared);
}

/** The continued run, in the foreground. */
async function goOn(values: Record<string, unknown>, home: string, p: Prepared): Promise<number> {
  const json = values.json === true;
  const early: string[] = [];
  const settings = await orJsonError(json, async () => readSettings(values as Parameters<typeof readSettings>[0], process.env, (m) => early.push(m)));
  // --engine podman: every engine client of this command talks to Podman, its recovery of earlier runs too
  useEngine(settings.engine.name);
  return runForeground({ home, settings, json, early, waitAtGate: values['no-wait-at-gate'] !== true }, p.loaded, {
    keepWorkspace: false,
    inputs: p.inputs,
    startedBy: cliActor(),
    continuation: p.continuation,
  });
}
