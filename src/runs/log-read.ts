/**
 * A run's log for a model, bounded: the last lines (a tail), or the lines
 * written since a cursor an earlier answer gave, at most so many bytes at a
 * time. The cursor is where each step's log was read up to, as an opaque
 * string; only the run's own logs are read (LogCursor lists them), so a
 * cursor cannot name another file.
 */
import { open } from 'node:fs/promises';
import path from 'node:path';
import { RunnerError } from '../common/errors.js';
import { visible } from '../common/visible.js';
import { LogCursor, logOfStep } from '../run/log-cursor.js';
import type { RunRecord } from '../run/record.js';

export interface LogAnswer {
  lines: string[];
  /** give it back as `cursor` for what is written next */
  cursor: string;
  /** more was written than this answer holds: ask again with the cursor */
  more: boolean;
}

/** The position as a cursor string. Pure. */
export function encodeCursor(position: ReadonlyMap<string, number>): string {
  return Buffer.from(JSON.stringify([...position])).toString('base64url');
}

/** A cursor string back to a position; bad_request when it is not one this server gave. Pure. */
export function decodeCursor(text: string): Map<string, number> {
  let pairs: unknown;
  try {
    pairs = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
  } catch {
    pairs = undefined;
  }
  const ok = Array.isArray(pairs) && pairs.length <= 10_000 && pairs.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && Number.isSafeInteger(p[1]) && p[1] >= 0);
  if (!ok) throw new RunnerError('bad_request', 'the cursor is not one run_log gave: pass the cursor of an earlier run_log answer as it was, or leave it out for the tail');
  return new Map(pairs as Array<[string, number]>);
}

const TAIL_READ = 64 * 1024;

/** The last `lines` lines of the run's logs (of one step, when named), and a cursor at their end. */
export async function logTail(stepsDir: string, rec: RunRecord, step: string | undefined, lines: number, maxBytes: number): Promise<LogAnswer> {
  const cursor = new LogCursor(stepsDir);
  const names = (await cursor.steps(rec)).filter((n) => !step || logOfStep(n, step));
  const position = new Map<string, number>();
  const all: string[] = [];
  for (const name of names) {
    const fh = await open(path.join(stepsDir, `${name}.log`), 'r');
    try {
      const size = (await fh.stat()).size;
      const from = Math.max(0, size - TAIL_READ);
      const buf = Buffer.alloc(size - from);
      const { bytesRead } = await fh.read(buf, 0, buf.length, from);
      const got = buf.subarray(0, bytesRead);
      const end = got.lastIndexOf(0x0a) + 1; // whole lines only: a line still being written comes with the next read
      position.set(name, from + end);
      let text = got.subarray(0, end).toString('utf8');
      if (from > 0) text = text.slice(text.indexOf('\n') + 1); // the first line read is a piece of one
      for (const l of text.split('\n').slice(0, -1)) all.push(`[${name}] ${visible(l)}`);
    } finally {
      await fh.close();
    }
  }
  const picked = bound(all.slice(-lines), maxBytes, true);
  return { lines: picked, cursor: encodeCursor(position), more: false };
}

/** The lines written after `from`, up to about maxBytes, and a cursor at where this answer stops. */
export async function logFrom(stepsDir: string, rec: RunRecord, step: string | undefined, from: Map<string, number>, maxBytes: number): Promise<LogAnswer> {
  const cursor = new LogCursor(stepsDir, Math.min(maxBytes, 64 * 1024));
  cursor.seek(from);
  const out: string[] = [];
  let bytes = 0;
  let more = false;
  for (;;) {
    const batch = await cursor.read(rec, step);
    for (const l of batch.lines) {
      const line = `[${l.step}] ${visible(l.line)}`;
      out.push(line.length > 4000 ? `${line.slice(0, 4000)}… (${line.length - 4000} more characters)` : line);
      bytes += Math.min(line.length, 4000) + 1;
    }
    if (!batch.more) break;
    if (bytes >= maxBytes) {
      more = true;
      break;
    }
  }
  return { lines: out, cursor: encodeCursor(cursor.position()), more };
}

/** As many lines as fit in maxBytes, from the end (a tail) or the start; a line over 4000 characters is cut. Pure. */
export function bound(lines: string[], maxBytes: number, fromEnd: boolean): string[] {
  const cut = lines.map((l) => (l.length > 4000 ? `${l.slice(0, 4000)}… (${l.length - 4000} more characters)` : l));
  const order = fromEnd ? [...cut].reverse() : cut;
  const kept: string[] = [];
  let bytes = 0;
  for (const l of order) {
    if (bytes + l.length + 1 > maxBytes && kept.length) break;
    kept.push(l);
    bytes += l.length + 1;
  }
  return fromEnd ? kept.reverse() : kept;
}
