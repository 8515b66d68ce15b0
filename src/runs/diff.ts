/**
 * A run's change against the commit it started from: the files it changes,
 * one file's part of the patch, or the whole patch (diff-index.ts reads
 * diff.patch); for a run on a persistent directory, which has no patch, what
 * each step added, modified and deleted. The run is checked first as for
 * every operation (show.ts: a run id, known, the door's).
 */
import { open } from 'node:fs/promises';
import type { RunRecord } from '../run/record.js';
import type { Door } from './door.js';
import { diffFiles, filePatch, runPatch, type DiffFile, type DiffIndex } from './diff-index.js';
import { showRun } from './show.js';

/** The files the run's patch changes, with their counts. */
export async function diffFilesOf(door: Door, id: string): Promise<{ files: Array<Omit<DiffFile, 'offset'>>; total: DiffIndex['total'] }> {
  await showRun(door, id); // run_unknown and outside_scope before no_diff
  return diffFiles(door.runsDir, id);
}

/** The whole patch: where it is and its size, for a reader that streams it (the API, runner diff). */
export async function patchOf(door: Door, id: string): Promise<{ file: string; size: number; record: RunRecord }> {
  await showRun(door, id); // run_unknown and outside_scope before no_diff
  return runPatch(door.runsDir, id);
}

/** One file's part(s) of the patch: where they lie, for a read stream. */
export async function filePatchOf(door: Door, id: string, name: string): Promise<{ file: string; start: number; end: number; size: number }> {
  await showRun(door, id); // run_unknown and outside_scope before no_diff
  return filePatch(door.runsDir, id, name);
}

/** As text, bounded (run_diff): one file's part, or the whole patch, up to maxBytes. */
export async function patchText(door: Door, id: string, o: { file?: string | undefined; maxBytes: number }): Promise<{ patch: string; bytes: number; truncated: boolean }> {
  if (o.file !== undefined) {
    const part = await filePatchOf(door, id, o.file);
    return readPart(part.file, part.start, part.size, o.maxBytes);
  }
  const whole = await patchOf(door, id);
  return readPart(whole.file, 0, whole.size, o.maxBytes);
}

/** Up to max bytes of a patch from `start`, as text. */
async function readPart(file: string, start: number, size: number, max: number): Promise<{ patch: string; bytes: number; truncated: boolean }> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(Math.min(size, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, start);
    return { patch: buf.subarray(0, bytesRead).toString('utf8'), bytes: size, truncated: size > bytesRead };
  } finally {
    await fh.close();
  }
}
