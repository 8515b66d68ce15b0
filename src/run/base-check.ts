/**
 * Old red or new: a `verify: true` step that failed is run once more, the
 * same way (its image, limits, isolation, egress, caches), on a worktree at
 * the run's base; whether it failed there too is remembered in the runner home
 * per base commit, image and command for a day, so later runs from the same
 * base are not slowed by it again. The step's entry then says "pre-existing (failed on the
 * base abc123 too)" or "introduced by this run (passed on the base abc123)".
 * The run's status is not changed: a failed verify still fails the run, and
 * delivery still refuses it; what a person decides from it is theirs.
 */
import { createHash } from 'node:crypto';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { errorMessage } from '../common/errors.js';
import type { StepPlan } from '../plan/step-plan.js';
import { describeStatus, type StepResult } from './step-result.js';

/** What the step's entry says of its failure on the base. */
export interface BaseCheck {
  commit: string;
  verdict: 'pre_existing' | 'introduced';
  /** the base's own exit */
  exitCode: number | null;
  /** the run (and its step's log, `<name>.base`) where the base was tried */
  runId: string;
  checkedAt: string;
  /** taken from an earlier run's trial of the same base and command */
  remembered?: true;
}

/**
 * How long what a base said is taken as still true: a day. A base commit does not change, but what its check
 * reaches may (a registry down for an hour, a package yanked): a failure of the moment is not remembered for ever.
 */
export const REMEMBERED_MS = 24 * 60 * 60 * 1000;

/** Where the runner home keeps what it learned of bases. */
export function baseChecksDir(home: string): string {
  return path.join(home, 'base-checks');
}

/** The memo's key: the base commit, the image and the command, as the file says them. Pure. */
export function baseCheckKey(base: string, plan: Pick<StepPlan, 'image' | 'run' | 'command'>): string {
  return createHash('sha256')
    .update(JSON.stringify([base, plan.image, plan.run ?? null, plan.command ?? null]))
    .digest('hex');
}

/** A verify step's failure the base can tell about: it ran and exited non-zero (not a limit, not a refusal, not a cancel). Pure. */
export function baseCanTell(plan: Pick<StepPlan, 'verify'>, result: Pick<StepResult, 'status' | 'error' | 'exitCode'>): boolean {
  return plan.verify && result.status === 'failed' && result.error === undefined && result.exitCode !== null;
}

/** What the base's run of the step says, or undefined when it cannot say (it timed out, was refused, canceled). Pure. */
export function verdictOf(base: Pick<StepResult, 'status' | 'error' | 'exitCode'>): BaseCheck['verdict'] | undefined {
  if (base.status === 'completed') return 'introduced';
  if (base.status === 'failed' && base.error === undefined && base.exitCode !== null) return 'pre_existing';
  return undefined;
}

/** The words for a person: "pre-existing (failed on the base abc123 too)" / "introduced by this run (passed on the base abc123)". Pure. */
export function describeBase(b: Pick<BaseCheck, 'verdict' | 'commit' | 'exitCode' | 'remembered' | 'runId'>): string {
  const short = b.commit.slice(0, 10);
  const seen = b.remembered ? `, as run ${b.runId} found` : '';
  return b.verdict === 'pre_existing'
    ? `pre-existing (failed on the base ${short} too${b.exitCode !== null ? `, exit ${b.exitCode}` : ''}${seen})`
    : `introduced by this run (passed on the base ${short}${seen})`;
}

export async function readBaseCheck(home: string, key: string): Promise<BaseCheck | undefined> {
  try {
    const b = JSON.parse(await readFile(path.join(baseChecksDir(home), `${key}.json`), 'utf8')) as BaseCheck;
    return (b.verdict === 'pre_existing' || b.verdict === 'introduced') && typeof b.commit === 'string' ? b : undefined;
  } catch {
    return undefined;
  }
}

async function rememberBaseCheck(home: string, key: string, b: BaseCheck): Promise<void> {
  await mkdir(baseChecksDir(home), { recursive: true, mode: 0o700 });
  await writeFileAtomic(path.join(baseChecksDir(home), `${key}.json`), `${JSON.stringify(b)}\n`);
}

export interface BaseTrial {
  home: string;
  plan: StepPlan;
  base: string;
  runId: string;
  now: () => Date;
  /** runs the step on a worktree at the base and gives its entry (the caller opens and closes that worktree) */
  runOnBase: () => Promise<StepResult>;
  say: (line: string) => void;
}

/**
 * Tells whether a failed verify step failed on the base too: from the memo, or
 * by running it there (then remembered). Undefined, with the reason said, when
 * the base could not tell; never throws (the run's outcome is the step's).
 */
export async function checkOnBase(t: BaseTrial): Promise<BaseCheck | undefined> {
  const key = baseCheckKey(t.base, t.plan);
  const known = await readBaseCheck(t.home, key);
  if (known && t.now().getTime() - Date.parse(known.checkedAt) < REMEMBERED_MS) return { ...known, remembered: true };
  try {
    const r = await t.runOnBase();
    const verdict = verdictOf(r);
    if (!verdict) {
      t.say(`on the base ${t.base.slice(0, 10)} the step ${describeStatus(r.status, r.exitCode)}${r.message ? ` (${r.message})` : ''}: whether its failure is this run's cannot be told`);
      return undefined;
    }
    const found: BaseCheck = { commit: t.base, verdict, exitCode: r.exitCode, runId: t.runId, checkedAt: t.now().toISOString() };
    await rememberBaseCheck(t.home, key, found).catch((err) => t.say(`what the base said could not be remembered: ${errorMessage(err)}`));
    return found;
  } catch (err) {
    t.say(`the step could not be tried on the base ${t.base.slice(0, 10)}: ${errorMessage(err)}`);
    return undefined;
  }
}
