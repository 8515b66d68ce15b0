/**
 * A run that ended, or that reached an approval gate, tells the pipeline's
 * `notify:` entries whose `on:` names its status (a gate's step may name the
 * entries it tells instead), in the background: the run never waits on it,
 * and nothing a receiver does fails the run. Each attempt's outcome is a run event
 * (`notify_sent`, `notify_failed` naming the entry and the HTTP status or
 * error, never the secret), appended to the run's events.jsonl. The requests
 * keep the process alive until they end (bounded by the send's deadline), so a
 * `runner exec` makes its final attempt before it exits.
 */
import { appendFile } from 'node:fs/promises';
import type { RunRecord } from '../run/record.js';
import { entryFires, notifyBody, notifyStatus, renderBody, type GateInfo } from './body.js';
import type { NotifyFile, NotifyStatus } from './schema.js';
import { DEFAULT_LIMITS, send, type Attempt, type SendLimits } from './send.js';

export interface RunEndNotice {
  notify: NotifyFile | undefined;
  record: RunRecord;
  /** the secrets' values the entries sign with, by name */
  secrets: Readonly<Record<string, string>>;
  /** the run's events.jsonl */
  eventsFile: string;
  /** the run's clock, for the body's time and the events' (a signature's timestamp is always the wall clock's: a receiver compares it with its own) */
  now: () => Date;
  limits?: SendLimits;
}

export interface RunEventNotice extends RunEndNotice {
  /** what happened: a run's end as `on:` names it, or `awaiting_approval` when it reaches a gate */
  event: NotifyStatus;
  /**
   * An approval step's own `notify: [names]`: those entries are told, whatever
   * their `on:` says (the step asked for them by name), and no other. Without
   * it, every entry whose `on:` names the event.
   */
  only?: readonly string[];
  /** the gate the run waits at (or that rejected it): its step, prompt, deadline and how to approve */
  extra?: GateInfo;
}

const pending = new Set<Promise<void>>();

/**
 * Starts the deliveries a run's end calls for and returns at once; `settled()`
 * waits for them. A run stopped at a gate (awaiting_approval, its record's
 * `gate` set) tells of the gate: the gate step's own `notify:` entries, or
 * those whose `on:` names awaiting_approval, with the gate in the body.
 */
export function notifyRunEnd(n: RunEndNotice, status: NotifyStatus | undefined = notifyStatus(n.record)): void {
  const gate = n.record.status === 'awaiting_approval' ? n.record.gate : undefined;
  if (gate) {
    notifyRunEvent({ ...n, event: 'awaiting_approval', ...(gate.notify?.length ? { only: gate.notify } : {}), extra: { step: gate.name, prompt: gate.prompt, deadline: gate.deadline } });
    return;
  }
  if (status) notifyRunEvent({ ...n, event: status });
}

/**
 * Starts the deliveries an event of a run calls for (its end, or a gate it
 * reached) and returns at once, never throwing; `settled()` waits for them.
 * Each body is signed with its entry's secret, as at a run's end.
 */
export function notifyRunEvent(n: RunEventNotice): void {
  if (!n.notify) return;
  try {
    const status = n.event;
    const body = notifyBody(n.record, status, n.now(), n.extra);
    for (const [name, entry] of Object.entries(n.notify)) {
      if (n.only ? !n.only.includes(name) : !entryFires(entry, status)) continue;
      const secret = entry.secret !== undefined ? n.secrets[entry.secret] : undefined;
      const delivery = deliver(n, name, status, { url: entry.webhook, body: renderBody(body, entry.format), ...(secret !== undefined ? { secret } : {}), now: () => new Date() });
      pending.add(delivery);
      void delivery.finally(() => pending.delete(delivery));
    }
  } catch {
    // a notification never fails the run it is about
  }
}

/** Every delivery started in this process, ended (each is bounded by its deadline). */
export async function settled(): Promise<void> {
  while (pending.size) await Promise.all([...pending]);
}

async function deliver(n: RunEndNotice & Pick<RunEventNotice, 'extra'>, name: string, status: NotifyStatus, req: Parameters<typeof send>[0]): Promise<void> {
  // the events are written in order, one after the other
  let written = Promise.resolve();
  const write = (type: string, level: 'info' | 'warn', data: Record<string, unknown>) => {
    const gate = n.extra ? { step: n.extra.step } : {};
    const line = `${JSON.stringify({ level, message: type, notify: name, status, ...gate, ...data, timestamp: n.now().toISOString() })}\n`;
    written = written.then(() => appendFile(n.eventsFile, line)).catch(() => undefined);
  };
  let host = '';
  try {
    host = new URL(req.url).host;
    const delivered = await send(
      req,
      (a: Attempt) => {
        const what = { attempt: a.attempt, host, ...(a.httpStatus !== undefined ? { httpStatus: a.httpStatus } : {}), ...(a.error ? { error: a.error } : {}) };
        if (a.ok) write('notify_sent', 'info', what);
        else write('notify_failed', 'warn', what);
      },
      n.limits ?? DEFAULT_LIMITS,
    );
    if (!delivered) write('notify_failed', 'warn', { host, final: true, error: 'gave up: no attempt was answered with 2xx within the bound' });
  } catch (err) {
    write('notify_failed', 'warn', { host, final: true, error: err instanceof Error ? err.message : String(err) });
  }
  await written;
}
