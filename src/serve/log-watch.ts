/**
 * One watcher per run for runner serve's live logs, however many follow it.
 * Each tick (300 ms) the watcher reads the run's record once and its new log
 * lines once, and writes each batch, as one buffer, to every follower that
 * keeps up. A follower with more than MAX_BUFFERED waiting for it is no
 * longer written to: once it drains it reads on by itself, from where it
 * stands up to where the watcher stands, then is live again (and the watcher
 * reads on at once: a log that pours goes at the pace of its fastest reader).
 * A newcomer does the same from the start of the log. So a follower that
 * never reads costs MAX_BUFFERED and a batch at most, and nothing per tick;
 * one stalled past `stallMs` is cut.
 */
import type http from 'node:http';
import { errorMessage } from '../common/errors.js';
import { LogCursor } from '../run/log-cursor.js';
import type { RunRecord } from '../run/record.js';
import type { NotStarted } from './api.js';
import { LogFollower, sseLines } from './log-follower.js';

export interface LogWatchOptions {
  /** the run's record (or what this server is doing with it), as the API answers it */
  record: (runId: string) => Promise<RunRecord | NotStarted>;
  /** where the run's step logs are */
  stepsDir: (runId: string) => string;
  /** a follower that has not taken what waits for it within this long is cut, in ms */
  stallMs: number;
  /** how often the record and logs are read, in ms */
  tickMs?: number;
  /** a comment line after this long without a write keeps proxies from closing a quiet stream, in ms */
  keepAliveMs?: number;
  /** told when a watcher cannot read its run */
  say?: (message: string) => void;
}

const STILL_GOING = new Set(['running', 'queued', 'starting']);

/** The watchers of the runs being followed, by run id. */
export class LogWatches {
  private readonly watches = new Map<string, RunLogWatch>();

  constructor(private readonly o: LogWatchOptions) {}

  /** Streams the run's log to `res` (its head already written) until the run ends or the client goes. */
  follow(runId: string, res: http.ServerResponse): Promise<void> {
    let watch = this.watches.get(runId);
    if (!watch) {
      watch = new RunLogWatch(runId, this.o, () => this.watches.delete(runId));
      this.watches.set(runId, watch);
    }
    return watch.add(new LogFollower(res, this.o.stepsDir(runId)));
  }

  /** How many runs are watched now (one watcher each). */
  size(): number {
    return this.watches.size;
  }
}

class RunLogWatch {
  /** where the watcher stands: the lines before it were written to every live follower */
  private readonly cursor: LogCursor;
  private edge: ReadonlyMap<string, number> = new Map();
  private rec: RunRecord | NotStarted | undefined;
  /** the run's last status, once it ended */
  private ended: string | undefined;
  private readonly followers = new Set<LogFollower>();
  private timer: NodeJS.Timeout | undefined;
  private pumping: Promise<void> | undefined;
  private pumpAgain = false;
  private readonly tickMs: number;
  private readonly keepAliveMs: number;

  constructor(
    private readonly runId: string,
    private readonly o: LogWatchOptions,
    private readonly onEmpty: () => void,
  ) {
    this.cursor = new LogCursor(o.stepsDir(runId));
    this.tickMs = o.tickMs ?? 300;
    this.keepAliveMs = o.keepAliveMs ?? 15_000;
  }

  add(f: LogFollower): Promise<void> {
    this.followers.add(f);
    void f.done().then(() => this.remove(f));
    this.schedule(0); // a new watcher reads at once; one already ticking goes on as it was
    void this.catchUp(f);
    return f.done();
  }

  private remove(f: LogFollower): void {
    this.followers.delete(f);
    if (this.followers.size) return;
    clearTimeout(this.timer);
    this.timer = undefined;
    this.onEmpty();
  }

  private schedule(ms: number): void {
    if (this.timer || !this.followers.size) return;
    this.timer = setTimeout(() => {
      void this.tick().finally(() => {
        this.timer = undefined;
        this.schedule(this.tickMs);
      });
    }, ms);
  }

  /** The record and the new lines, read once for all; then each follower's keep-alive and stall. */
  private async tick(): Promise<void> {
    try {
      if (this.ended === undefined) {
        const rec = await this.o.record(this.runId);
        this.rec = rec;
        if (STILL_GOING.has(rec.status)) {
          // Not awaited: a pump that pours a big log to a fast reader must not hold up the stall checks.
          this.pump().catch((err) => this.fail(err));
        } else {
          // The rest is read by each follower, to the end of the logs, then the end event.
          this.ended = rec.status;
          for (const f of [...this.followers]) if (f.live) void this.catchUp(f);
        }
      }
    } catch (err) {
      this.fail(err);
      return;
    }
    const now = Date.now();
    for (const f of this.followers) {
      if (f.stalledFor(this.o.stallMs, now)) f.cut();
      else if (f.live && now - f.lastWrite > this.keepAliveMs && !f.write(': still running\n\n')) this.fallBehind(f);
    }
  }

  /**
   * Reads on while any follower is live, one read at a time: a tick and a
   * follower back at the edge (it may want more at once) share one pump.
   */
  private pump(): Promise<void> {
    if (this.pumping) {
      this.pumpAgain = true;
      return this.pumping;
    }
    // Cleared in a callback, always after the assignment (a pump with nothing to read ends at once).
    this.pumping = this.pumpOn().finally(() => (this.pumping = undefined));
    return this.pumping;
  }

  private async pumpOn(): Promise<void> {
    do {
      this.pumpAgain = false;
      const rec = this.rec;
      if (rec && 'steps' in rec && this.ended === undefined) await this.readNew(rec);
    } while (this.pumpAgain);
  }

  /** Reads on while any follower is live, and writes each batch to those that are. */
  private async readNew(rec: RunRecord): Promise<void> {
    while (this.ended === undefined && [...this.followers].some((f) => f.live)) {
      const batch = await this.cursor.read(rec);
      if (!batch.lines.length) return;
      const chunk = sseLines(batch.lines);
      // From here to the last write nothing awaits: a follower is live at the old edge or catches up to the new one.
      // A live follower stands at the edge; its own cursor is set when it leaves (fallBehind, catchUp).
      this.edge = this.cursor.position();
      for (const f of [...this.followers]) if (f.live && !f.write(chunk)) this.fallBehind(f);
    }
  }

  /** The run's record or logs could not be read: its followers are cut (the client may ask again). */
  private fail(err: unknown): void {
    this.o.say?.(`live log of run ${this.runId}: ${errorMessage(err)}; its followers are cut`);
    for (const f of this.followers) f.cut();
  }

  /** A follower that did not take what it was sent: not written to until it drains, then it catches up. */
  private fallBehind(f: LogFollower): void {
    this.leave(f);
    void f.drained().then((open) => (open ? this.catchUp(f) : undefined));
  }

  /** A live follower stops being written to, at the edge. */
  private leave(f: LogFollower): void {
    if (!f.live) return;
    f.cursor.seek(this.edge);
    f.live = false;
  }

  /**
   * A follower reads on by itself, at its own pace, up to where the watcher
   * stands (to the end, once the run ended); there it is live again, or told
   * the run ended.
   */
  private async catchUp(f: LogFollower): Promise<void> {
    this.leave(f);
    try {
      while (!f.gone) {
        const ended = this.ended;
        const rec = this.rec;
        if (rec && 'steps' in rec) {
          const batch = await f.cursor.read(rec, undefined, ended === undefined ? this.edge : undefined);
          if (f.gone) return;
          if (batch.lines.length) {
            if (!f.write(sseLines(batch.lines)) && !(await f.drained())) return;
            continue;
          }
        }
        if (ended !== undefined) return f.finish(ended);
        if (this.ended !== undefined) continue; // it ended while this one read: read on to the end
        if (f.cursor.at(this.edge)) {
          f.live = true;
          // The log may have grown past the edge since the last tick: read on now rather than at the next.
          this.pump().catch((err) => this.fail(err));
          return;
        }
      }
    } catch (err) {
      this.o.say?.(`live log of run ${this.runId}: ${errorMessage(err)}; a follower is cut`);
      f.cut();
    }
  }
}
