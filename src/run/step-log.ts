/**
 * A step's log file, written synchronously so that output is never queued in
 * the runner's memory, and capped so a step cannot fill the host's disk
 * through its log.
 */
import { closeSync, openSync, writeSync } from 'node:fs';

export const MAX_STEP_LOG = 100 * 1024 * 1024;

export class StepLog {
  private fd: number | undefined;
  private written = 0;
  private cut = false;

  constructor(file: string, private readonly maxBytes = MAX_STEP_LOG) {
    this.fd = openSync(file, 'a', 0o644);
  }

  line(text: string): void {
    if (this.fd === undefined || this.cut) return;
    const buf = Buffer.from(`${text}\n`);
    if (this.written + buf.length > this.maxBytes) {
      writeSync(this.fd, `[runner: log cut at ${this.maxBytes} bytes; the rest of this step's output was shown but not kept]\n`);
      this.cut = true;
      return;
    }
    writeSync(this.fd, buf);
    this.written += buf.length;
  }

  close(): void {
    if (this.fd !== undefined) closeSync(this.fd);
    this.fd = undefined;
  }
}
