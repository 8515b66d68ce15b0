/**
 * Reads a run's step logs as they grow, whole lines only, from where the last
 * read stopped: for `runner logs` and the API's live log. Each read takes at
 * most `chunkBytes` from disk, so a reader of a 100 MiB log holds one chunk
 * at a time; the caller writes it out, waits for its reader, and reads on
 * while `more` says there is more. Where it stands (`position`) can be read
 * and set, and a read can be bounded by another cursor's position: runner
 * serve's followers of one run catch up to the run's one watcher this way.
 */
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { RunRecord } from './record.js';
import { resultName } from './step-result.js';

/** Whether a log's name (`implement`, `implement#2`, `build[0]#3`) belongs to `step` (an id, or one exact name). */
export function logOfStep(name: string, step: string): boolean {
  return name === step || name.startsWith(`${step}#`) || name.startsWith(`${step}[`);
}

export interface LogLine {
  step: string;
  line: string;
}

export interface LogBatch {
  lines: LogLine[];
  /** more whole lines may be waiting: read again at once rather than wait */
  more: boolean;
}

export const LOG_CHUNK = 64 * 1024;
/** No line the runner writes is longer; a longer one (a log written by something else) comes out in pieces of this size. */
const MAX_LINE_READ = 1024 * 1024;

export class LogCursor {
  private offsets = new Map<string, number>();

  constructor(
    private readonly stepsDir: string,
    private readonly chunkBytes = LOG_CHUNK,
  ) {}

  /** The names of the step runs with a log (`implement`, `implement#2`, `build[0]`), in the order the run ran them. */
  async steps(rec: Pick<RunRecord, 'steps' | 'current' | 'running'>): Promise<string[]> {
    const running = rec.running?.map((r) => r.name) ?? (rec.current ? [rec.current.id] : []);
    const order = [...rec.steps.map(resultName), ...running];
    const files = (await readdir(this.stepsDir).catch(() => [] as string[])).filter((f) => f.endsWith('.log')).map((f) => f.slice(0, -4));
    return [...order.filter((id) => files.includes(id)), ...files.filter((f) => !order.includes(f))];
  }

  /** How far each step's log has been read, in bytes (a step not named: not at all). */
  position(): ReadonlyMap<string, number> {
    return new Map(this.offsets);
  }

  /** Reads on from `position` (one this cursor or another gave). */
  seek(position: ReadonlyMap<string, number>): void {
    this.offsets = new Map(position);
  }

  /** Whether this cursor stands where `position` says. */
  at(position: ReadonlyMap<string, number>): boolean {
    for (const [step, at] of position) if ((this.offsets.get(step) ?? 0) !== at) return false;
    for (const [step, at] of this.offsets) if ((position.get(step) ?? 0) !== at) return false;
    return true;
  }

  /**
   * Whole lines written since the last call, about one chunk of them, from
   * the first step that has some. A line longer than a chunk is read whole
   * up to 1 MiB (longer than any the runner writes), in pieces beyond. With
   * `upTo` (another cursor's position), nothing past it is read: a step it
   * does not name is not read at all, and a piece the other cursor cut off a
   * long line is cut the same way here.
   */
  async read(rec: Pick<RunRecord, 'steps' | 'current' | 'running'>, onlyStep?: string, upTo?: ReadonlyMap<string, number>): Promise<LogBatch> {
    for (const step of await this.steps(rec)) {
      if (onlyStep && !logOfStep(step, onlyStep)) continue;
      const from = this.offsets.get(step) ?? 0;
      const bound = upTo ? (upTo.get(step) ?? 0) : Infinity;
      if (bound <= from) continue;
      const fh = await open(path.join(this.stepsDir, `${step}.log`), 'r');
      try {
        const size = Math.min((await fh.stat()).size, bound);
        if (size <= from) continue;
        // A line longer than a chunk (a step's non-UTF-8 output is stored 3 bytes a byte): read more, up to a bound;
        // pieces are 1 MiB whatever the chunk, so two cursors cut a long line the same way.
        for (let want = this.chunkBytes; ; want = Math.min(want * 2, MAX_LINE_READ)) {
          const buf = Buffer.alloc(Math.min(size - from, want));
          const { bytesRead } = await fh.read(buf, 0, buf.length, from);
          const got = buf.subarray(0, bytesRead);
          const whole = got.lastIndexOf(0x0a) + 1;
          if (whole > 0) {
            this.offsets.set(step, from + whole);
            // More may wait in this step or a later one: the caller reads again, and an empty batch ends it.
            return { lines: got.subarray(0, whole - 1).toString('utf8').split('\n').map((line) => ({ step, line })), more: true };
          }
          if (bytesRead < want) {
            if (from + bytesRead < bound) break; // a line still being written
            this.offsets.set(step, bound); // the bound ends a piece of a long line
            return { lines: [{ step, line: got.toString('utf8') }], more: true };
          }
          if (want >= MAX_LINE_READ) {
            this.offsets.set(step, from + bytesRead);
            return { lines: [{ step, line: got.toString('utf8') }], more: true };
          }
        }
      } finally {
        await fh.close();
      }
    }
    return { lines: [], more: false };
  }
}
