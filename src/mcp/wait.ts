/**
 * Waiting for a run to end, bounded, so a model does not poll in a tight
 * loop: the record is read every second; meanwhile a progress notification
 * every 5 s says where the run stands (when the client asked for progress),
 * and a client that cancels the call ends the wait.
 */
import type { RunRecord } from '../run/record.js';
import type { NotStarted } from '../runs/show.js';

export interface WaitExtra {
  signal: AbortSignal;
  _meta?: { progressToken?: string | number | undefined } | undefined;
  sendNotification: (n: { method: 'notifications/progress'; params: { progressToken: string | number; progress: number; total?: number; message?: string } }) => Promise<void>;
}

/** Where a run stands, in a few words. Pure. */
export function progressLine(r: RunRecord | NotStarted): string {
  if (!('steps' in r)) return `${r.status}`;
  const now = r.running?.map((x) => x.name) ?? (r.current ? [r.current.id] : []);
  return `${r.status}${now.length ? `: step ${now.join(', ')}` : ''}; ${r.steps.length} step run(s) done`;
}

export async function waitForRun(
  read: () => Promise<RunRecord | NotStarted>,
  ended: (r: RunRecord | NotStarted) => boolean,
  timeoutMs: number,
  extra: WaitExtra,
  pollMs = 1000,
): Promise<RunRecord | NotStarted> {
  const start = Date.now();
  const token = extra._meta?.progressToken;
  let lastNote = start;
  for (;;) {
    const r = await read();
    const waited = Date.now() - start;
    if (ended(r) || waited >= timeoutMs || extra.signal.aborted) return r;
    if (token !== undefined && Date.now() - lastNote >= 5000) {
      lastNote = Date.now();
      await extra
        .sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: Math.round(waited / 1000), total: Math.round(timeoutMs / 1000), message: progressLine(r) } })
        .catch(() => undefined);
    }
    // One listener at a time on the call's signal: a listener left behind at each poll piled up (Node's
    // MaxListenersExceededWarning on runner mcp's stderr after 11 s of waiting).
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        extra.signal.removeEventListener('abort', done);
        resolve();
      };
      const t = setTimeout(done, Math.min(pollMs, timeoutMs - waited));
      extra.signal.addEventListener('abort', done, { once: true });
    });
  }
}
