/**
 * One client of a run's live log (GET /api/runs/:id/log): its response, where
 * it stands in the run's logs, and whether it keeps up. Either it is live
 * (its run's watcher writes each new batch to it) or it reads on by itself,
 * from where it stands, at its own pace (log-watch.ts decides which).
 */
import type http from 'node:http';
import type { LogLine } from '../run/log-cursor.js';
import { LogCursor } from '../run/log-cursor.js';

/** The lines as Server-Sent Events: `data: {"step","line"}` each. */
export function sseLines(lines: LogLine[]): Buffer {
  return Buffer.from(lines.map((l) => `data: {"step":${JSON.stringify(l.step)},"line":${JSON.stringify(l.line)}}\n\n`).join(''));
}

/**
 * What may wait for one client before it counts as behind: a few chunks, so
 * a client that reads keeps up with a log that pours (a write past the
 * stream's 16 KiB mark is not yet a client that lags). Batches are shared
 * buffers: followers behind on the same batch hold one copy of it.
 */
export const MAX_BUFFERED = 256 * 1024;

export class LogFollower {
  /** where this client stands in the run's logs */
  readonly cursor: LogCursor;
  /** the watcher writes each new batch to it */
  live = false;
  /** since when what was written waits for the client to take it (undefined: it took it all) */
  stalledSince: number | undefined;
  lastWrite = Date.now();
  private closed = false;
  private readonly ended: Promise<void>;

  constructor(
    readonly res: http.ServerResponse,
    stepsDir: string,
  ) {
    this.cursor = new LogCursor(stepsDir);
    this.ended = new Promise((resolve) => res.once('close', () => ((this.closed = true), resolve())));
  }

  /** The client went, or the stream was ended or cut. */
  get gone(): boolean {
    return this.closed || this.res.destroyed || this.res.writableEnded;
  }

  /** Resolves once the stream is closed, whoever closed it. */
  done(): Promise<void> {
    return this.ended;
  }

  /**
   * Writes `chunk`; false when more than MAX_BUFFERED waits for the client
   * (or it went): it is then stalled until it has taken everything.
   */
  write(chunk: Buffer | string): boolean {
    if (this.gone) return false;
    this.lastWrite = Date.now();
    this.res.write(chunk);
    if (this.res.writableLength <= MAX_BUFFERED) return true;
    this.stalledSince ??= Date.now();
    return false;
  }

  /** Resolves when the client took what waited (true) or went (false). */
  drained(): Promise<boolean> {
    if (this.gone) return Promise.resolve(false);
    if (!this.res.writableNeedDrain || this.res.writableLength === 0) {
      this.stalledSince = undefined;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const onDrain = () => {
        this.res.off('close', onClose);
        this.stalledSince = undefined;
        resolve(true);
      };
      const onClose = () => {
        this.res.off('drain', onDrain);
        resolve(false);
      };
      this.res.once('drain', onDrain);
      this.res.once('close', onClose);
    });
  }

  /** Whether it has stalled for longer than `ms`. */
  stalledFor(ms: number, now: number): boolean {
    return this.stalledSince !== undefined && now - this.stalledSince > ms;
  }

  /** The run ended with `status`: says so and ends the stream. */
  finish(status: string): void {
    if (this.gone) return;
    this.res.end(`event: end\ndata: ${JSON.stringify({ status })}\n\n`);
    if (this.res.writableLength > 0) this.stalledSince ??= Date.now(); // closed once the client takes the rest, or cut
  }

  /** Cuts the stream (a client that stopped reading, a failure). */
  cut(): void {
    this.res.destroy();
  }
}
