/**
 * Reads a run's step logs as they grow, whole lines only, from where the last
 * read stopped: for `runner logs` and the API's live log. Each read takes at
 * most `chunkBytes` from disk, so a reader of a 100 MiB log holds one chunk
 * at a time; the caller writes it out, waits for its reader, and reads on
 * while `more` says there is more.
 */
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { RunRecord } from './record.js';

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

export class LogCursor {
  private offsets = new Map<string, number>();

  constructor(
    private readonly stepsDir: string,
    private readonly chunkBytes = LOG_CHUNK,
  ) {}

  /** The step ids with a log, in the order the run ran them. */
  async steps(rec: Pick<RunRecord, 'steps' | 'current'>): Promise<string[]> {
    const order = [...rec.steps.map((s) => s.id), ...(rec.current ? [rec.current.id] : [])];
    const files = (await readdir(this.stepsDir).catch(() => [] as string[])).filter((f) => f.endsWith('.log')).map((f) => f.slice(0, -4));
    return [...order.filter((id) => files.includes(id)), ...files.filter((f) => !order.includes(f))];
  }

  /**
   * Whole lines written since the last call, at most one chunk of them, from
   * the first step that has some. A line longer than a chunk (which the
   * runner never writes) comes out in chunk-sized pieces.
   */
  async read(rec: Pick<RunRecord, 'steps' | 'current'>, onlyStep?: string): Promise<LogBatch> {
    for (const step of await this.steps(rec)) {
      if (onlyStep && step !== onlyStep) continue;
      const from = this.offsets.get(step) ?? 0;
      const fh = await open(path.join(this.stepsDir, `${step}.log`), 'r');
      try {
        const { size } = await fh.stat();
        if (size <= from) continue;
        const buf = Buffer.alloc(Math.min(size - from, this.chunkBytes));
        const { bytesRead } = await fh.read(buf, 0, buf.length, from);
        const got = buf.subarray(0, bytesRead);
        let upTo = got.lastIndexOf(0x0a) + 1;
        const full = bytesRead === this.chunkBytes;
        if (upTo === 0 && !full) continue; // a line still being written
        const text = upTo === 0 ? got.toString('utf8') : got.subarray(0, upTo - 1).toString('utf8');
        if (upTo === 0) upTo = bytesRead;
        this.offsets.set(step, from + upTo);
        // More may wait in this step or a later one: the caller reads again, and an empty batch ends it.
        return { lines: text.split('\n').map((line) => ({ step, line })), more: true };
      } finally {
        await fh.close();
      }
    }
    return { lines: [], more: false };
  }
}
