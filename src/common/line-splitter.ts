/**
 * Splits a byte stream into lines with a bounded buffer: a line longer than
 * `maxLine` bytes is cut there, marked, and the rest of it dropped, so a step
 * printing one 100 MB line cannot grow the runner's memory. Pure.
 */

export const CUT_MARKER = ' [… line cut by runner]';

export class LineSplitter {
  private parts: Buffer[] = [];
  private size = 0;
  private dropping = false;

  private readonly maxLine: number;
  private readonly guard: number;

  /**
   * `guard`: how many bytes before the cut are dropped too, so that a secret
   * straddling the cut cannot leave its prefix in the kept part.
   */
  constructor(
    private readonly onLine: (line: string) => void,
    opts: { maxLine?: number; guard?: number } = {},
  ) {
    this.maxLine = opts.maxLine ?? 64 * 1024;
    this.guard = Math.min(opts.guard ?? 0, this.maxLine - 1);
  }

  push(chunk: Buffer): void {
    let start = 0;
    while (start < chunk.length) {
      const nl = chunk.indexOf(0x0a, start);
      const end = nl < 0 ? chunk.length : nl;
      this.append(chunk.subarray(start, end));
      if (nl < 0) break;
      this.flushLine();
      start = nl + 1;
    }
  }

  /** Emits what is left as a last line (a stream that did not end with a newline). */
  end(): void {
    if (this.size > 0 || this.dropping) this.flushLine();
  }

  private append(piece: Buffer): void {
    if (this.dropping || piece.length === 0) return;
    const room = this.maxLine - this.size;
    if (piece.length > room) {
      this.parts.push(Buffer.from(piece.subarray(0, room)));
      this.size += room;
      this.dropping = true;
      return;
    }
    this.parts.push(Buffer.from(piece));
    this.size += piece.length;
  }

  private flushLine(): void {
    const kept = this.dropping ? this.size - this.guard : this.size;
    let line = Buffer.concat(this.parts, this.size).subarray(0, kept).toString('utf8');
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (this.dropping) line += CUT_MARKER;
    this.parts = [];
    this.size = 0;
    this.dropping = false;
    this.onLine(line);
  }
}
