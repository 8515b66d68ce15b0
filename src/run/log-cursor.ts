/**
 * Reads a run's step logs as they grow, whole lines only, from where the last
 * read stopped: for `runner logs --follow` and the API's live log.
 */
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import type { RunRecord } from './record.js';

export interface LogLine {
  step: string;
  line: string;
}

export class LogCursor {
  private offsets = new Map<string, number>();

  constructor(private readonly stepsDir: string) {}

  /** The step ids with a log, in the order the run ran them. */
  async steps(rec: RunRecord): Promise<string[]> {
    const order = [...rec.steps.map((s) => s.id), ...(rec.current ? [rec.current.id] : [])];
    const files = (await readdir(this.stepsDir).catch(() => [] as string[])).filter((f) => f.endsWith('.log')).map((f) => f.slice(0, -4));
    return [...order.filter((id) => files.includes(id)), ...files.filter((f) => !order.includes(f))];
  }

  /** The whole lines written since the last call. */
  async read(rec: RunRecord, onlyStep?: string): Promise<LogLine[]> {
    const out: LogLine[] = [];
    for (const step of await this.steps(rec)) {
      if (onlyStep && step !== onlyStep) continue;
      const from = this.offsets.get(step) ?? 0;
      const fh = await open(path.join(this.stepsDir, `${step}.log`), 'r');
      try {
        const { size } = await fh.stat();
        if (size <= from) continue;
        const buf = Buffer.alloc(size - from);
        await fh.read(buf, 0, buf.length, from);
        const upTo = buf.lastIndexOf(0x0a) + 1;
        if (upTo === 0) continue;
        this.offsets.set(step, from + upTo);
        for (const line of buf.subarray(0, upTo - 1).toString('utf8').split('\n')) out.push({ step, line });
      } finally {
        await fh.close();
      }
    }
    return out;
  }
}
