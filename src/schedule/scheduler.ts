/**
 * Runs pipelines on their cron schedules: one timer for the earliest next
 * fire, the overlap rule of each entry, a global cap on concurrent runs with
 * a FIFO queue, and one catch-up run for entries that ask for it. The clock,
 * the timers and what "start a run" means are injected.
 */
import { errorMessage } from '../common/errors.js';
import { firedBetween, nextFire, type CronSpec } from './cron.js';
import type { StartedBy } from '../run/record.js';
import { admit, catchUp, decideFire, type Overlap } from './planner.js';

export interface ScheduleEntry extends CronSpec {
  overlap: Overlap;
  catchup: boolean;
}

export interface ScheduledPipeline {
  name: string;
  entries: ScheduleEntry[];
}

export interface SchedulerDeps {
  now: () => Date;
  setTimer: (ms: number, fn: () => void) => { cancel(): void };
  /** starts a run, under the id given out when it was asked for; resolves when the run has ended */
  start: (run: Pending) => Promise<void>;
  /** a new run id (given out when a run is asked for, so a queued run can be named and canceled) */
  newRunId: () => string;
  maxConcurrent: number;
  /** the last time an entry fired, as recorded (for catch-up) */
  lastFire: (pipeline: string, entry: number) => Date | undefined;
  recordFire: (pipeline: string, entry: number, at: Date) => void;
  /** told of each run the moment it is accepted (given its id), before it can start */
  accepted?: (run: Pending) => void;
  log: (message: string) => void;
}

const MAX_WAIT_MS = 3_600_000;

export type Why = 'schedule' | 'catchup' | 'trigger';

/** A run asked for that has not started yet. */
export interface Pending {
  pipeline: string;
  why: Why;
  runId: string;
  /** values for the pipeline's inputs (a trigger's); scheduled runs take the defaults */
  inputs?: Record<string, string>;
  /** what started it, as its record says */
  startedBy?: StartedBy;
}

export class Scheduler {
  private pipelines = new Map<string, ScheduledPipeline>();
  private next = new Map<string, Date>(); // `${pipeline}#${entry}` → next fire
  private running = new Map<string, number>();
  private heldBack = new Map<string, Pending>(); // overlap: queue, waiting for the pipeline's run
  private waiting: Pending[] = []; // admitted by the schedule, waiting for room under the cap
  private timer: { cancel(): void } | undefined;
  private stopped = false;
  private started = false;

  constructor(private readonly d: SchedulerDeps) {}

  /**
   * Replaces the set of pipelines (on start and on every reload); the first call also catches up. `carried`:
   * runs an earlier server accepted and never started, queued first, in their order, ahead of any catch-up.
   * Returns the carried runs whose pipeline is gone.
   */
  setPipelines(list: ScheduledPipeline[], carried: Pending[] = []): Pending[] {
    const now = this.d.now();
    this.pipelines = new Map(list.map((p) => [p.name, p]));
    this.next.clear();
    const orphans = carried.filter((p) => !this.pipelines.has(p.pipeline));
    this.waiting.push(...carried.filter((p) => this.pipelines.has(p.pipeline)));
    this.pump();
    for (const p of list) {
      p.entries.forEach((e, i) => {
        if (!this.started && catchUp(e.catchup, (a, b) => firedBetween(e, a, b), this.d.lastFire(p.name, i), now)) {
          this.d.log(`${p.name}: fires were missed while the server was down; one catch-up run`);
          this.d.recordFire(p.name, i, now);
          this.fire(p.name, e.overlap, 'catchup', e.cron);
        }
        const at = nextFire(e, now);
        if (at) this.next.set(`${p.name}#${i}`, at);
      });
    }
    this.started = true;
    this.arm();
    return orphans;
  }

  /** When each entry fires next, for the API and the dashboard. */
  nextFires(pipeline: string): Date[] {
    return [...this.next.entries()].filter(([k]) => k.startsWith(`${pipeline}#`)).map(([, at]) => at);
  }

  queueLength(): number {
    return this.waiting.length + this.heldBack.size;
  }

  runningCount(pipeline?: string): number {
    if (pipeline) return this.running.get(pipeline) ?? 0;
    return [...this.running.values()].reduce((a, b) => a + b, 0);
  }

  /** A run asked for by a person: it waits only for room under the cap. Its id, or undefined when the pipeline is unknown or the scheduler stopped. */
  trigger(pipeline: string, inputs?: Record<string, string>, startedBy?: StartedBy): string | undefined {
    if (this.stopped || !this.pipelines.has(pipeline)) return undefined;
    const p: Pending = { pipeline, why: 'trigger', runId: this.d.newRunId(), ...(inputs ? { inputs } : {}), ...(startedBy ? { startedBy } : {}) };
    this.d.accepted?.(p);
    this.waiting.push(p);
    this.pump();
    return p.runId;
  }

  /** The runs asked for that have not started, in the order they will start. */
  queued(): Pending[] {
    return [...this.waiting, ...this.heldBack.values()];
  }

  /** Drops a run that has not started and gives it back; undefined when no queued run has that id. */
  dequeue(runId: string): Pending | undefined {
    const i = this.waiting.findIndex((w) => w.runId === runId);
    if (i >= 0) return this.waiting.splice(i, 1)[0];
    for (const [k, v] of this.heldBack) {
      if (v.runId === runId) {
        this.heldBack.delete(k);
        return v;
      }
    }
    return undefined;
  }

  /** No more fires and no more starts; runs going on are left to the caller. */
  stop(): void {
    this.stopped = true;
    this.timer?.cancel();
    this.waiting = [];
    this.heldBack.clear();
  }

  private arm(): void {
    this.timer?.cancel();
    if (this.stopped || this.next.size === 0) return;
    const earliest = Math.min(...[...this.next.values()].map((d) => d.getTime()));
    // At most an hour at a time: timers cannot wait past 24.8 days, and a tick with nothing due just re-arms.
    this.timer = this.d.setTimer(Math.min(MAX_WAIT_MS, Math.max(0, earliest - this.d.now().getTime())), () => this.tick());
  }

  private tick(): void {
    const now = this.d.now();
    for (const [key, at] of this.next) {
      if (at.getTime() > now.getTime()) continue;
      const [name, idx] = [key.slice(0, key.lastIndexOf('#')), Number(key.slice(key.lastIndexOf('#') + 1))];
      const entry = this.pipelines.get(name)?.entries[idx];
      if (!entry) continue;
      this.d.recordFire(name, idx, at);
      this.fire(name, entry.overlap, 'schedule', entry.cron);
      const following = nextFire(entry, at);
      if (following) this.next.set(key, following);
      else this.next.delete(key);
    }
    this.arm();
  }

  private fire(pipeline: string, overlap: Overlap, why: Why, cron: string): void {
    const startedBy: StartedBy = { via: 'schedule', schedule: cron };
    const queuedHere = (this.heldBack.has(pipeline) ? 1 : 0) + this.waiting.filter((w) => w.pipeline === pipeline).length;
    const decision = decideFire(overlap, this.runningCount(pipeline), queuedHere);
    if (decision.action === 'skip') {
      this.d.log(`${pipeline}: fire skipped: ${decision.reason}`);
    } else if (decision.action === 'queue') {
      const p: Pending = { pipeline, why, runId: this.d.newRunId(), startedBy };
      this.d.accepted?.(p);
      this.heldBack.set(pipeline, p);
      this.d.log(`${pipeline}: queued behind its running run`);
    } else {
      const p: Pending = { pipeline, why, runId: this.d.newRunId(), startedBy };
      this.d.accepted?.(p);
      this.waiting.push(p);
      this.pump();
    }
  }

  private pump(): void {
    if (this.stopped) return;
    const { start, wait } = admit(this.waiting, this.runningCount(), this.d.maxConcurrent);
    this.waiting = wait;
    for (const p of start) this.launch(p);
  }

  private launch(p: Pending): void {
    this.running.set(p.pipeline, this.runningCount(p.pipeline) + 1);
    const done = () => {
      this.running.set(p.pipeline, this.runningCount(p.pipeline) - 1);
      const held = this.heldBack.get(p.pipeline);
      if (held && this.runningCount(p.pipeline) === 0) {
        this.heldBack.delete(p.pipeline);
        this.waiting.push(held);
      }
      this.pump();
    };
    this.d.start(p).then(done, (err) => {
      this.d.log(`${p.pipeline}: the run could not start: ${errorMessage(err)}`);
      done();
    });
  }
}
