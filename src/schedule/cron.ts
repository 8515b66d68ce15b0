/**
 * Cron expressions in a time zone, through croner (a maintained library that
 * handles DST: a time that does not exist on a spring-forward day fires once,
 * an hour later; one that exists twice on a fall-back day fires once). Pure.
 */
import { Cron } from 'croner';

export interface CronSpec {
  cron: string;
  timezone?: string | undefined;
}

function compile(spec: CronSpec): Cron {
  return new Cron(spec.cron, { paused: true, ...(spec.timezone ? { timezone: spec.timezone } : {}) });
}

/** The first fire time strictly after `after`, or null when there is none. */
export function nextFire(spec: CronSpec, after: Date): Date | null {
  return compile(spec).nextRun(after);
}

/** What is wrong with the expression or the time zone, or undefined when both are good. */
export function cronProblem(spec: CronSpec): string | undefined {
  try {
    const next = compile(spec).nextRun(new Date());
    return next ? undefined : `"${spec.cron}" never fires`;
  } catch (err) {
    return `${(err as Error).message.replace(/^CronPattern: /, '')}`;
  }
}

/** Whether some fire time lies in (from, to]. */
export function firedBetween(spec: CronSpec, from: Date, to: Date): boolean {
  const next = nextFire(spec, from);
  return next !== null && next.getTime() <= to.getTime();
}
