/** Reads a pipeline file from disk, size-capped, and parses it (see parse.ts). */
import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../common/errors.js';
import { parsePipeline } from './parse.js';
import type { PipelineFile } from './schema.js';

/** No pipeline is this long; a bigger file is refused before it is read whole (a 200 MB file took 943 MB to parse). */
export const MAX_PIPELINE_FILE = 1024 * 1024;

export interface LoadedPipeline {
  /** the file as the user named it, for messages */
  file: string;
  /** its directory, absolute: project.path is relative to it */
  dir: string;
  pipeline: PipelineFile;
  /** the file's text as it was read (a run keeps a copy: resume compares the file with it) */
  text?: string;
}

export async function loadPipeline(file: string): Promise<LoadedPipeline> {
  return parseLoaded(file, await readPipelineText(file));
}

/** A pipeline file's text, already read (readPipelineText), parsed. */
export function parseLoaded(file: string, text: string): LoadedPipeline {
  return { file, dir: path.dirname(path.resolve(file)), pipeline: parsePipeline(text, file), text };
}

/** A pipeline file's text, size-capped; a file that cannot be read is a PipelineError naming it. */
export async function readPipelineText(file: string): Promise<string> {
  const refuse = (message: string) => new PipelineError(file, [{ path: '', message }]);
  let fh;
  try {
    // Non-blocking: a FIFO named like a pipeline file cannot hang the reader.
    fh = await open(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw refuse(`cannot read the pipeline file: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
  }
  try {
    const st = await fh.stat();
    if (st.isDirectory()) throw refuse('cannot read the pipeline file: is a directory');
    if (!st.isFile()) throw refuse('cannot read the pipeline file: not a regular file');
    // Read one byte more than allowed: a file that grows after stat is still caught.
    const buf = Buffer.alloc(MAX_PIPELINE_FILE + 1);
    let got = 0;
    for (;;) {
      const { bytesRead } = await fh.read(buf, got, buf.length - got, got);
      if (bytesRead === 0 || (got += bytesRead) === buf.length) break;
    }
    if (got > MAX_PIPELINE_FILE || st.size > MAX_PIPELINE_FILE) {
      throw refuse(`the pipeline file is ${Math.max(st.size, got)} bytes; at most ${MAX_PIPELINE_FILE} (1 MiB): a pipeline names its scripts, it does not hold them`);
    }
    return buf.subarray(0, got).toString('utf8');
  } catch (err) {
    if (err instanceof PipelineError) throw err;
    throw refuse(`cannot read the pipeline file: ${(err as Error).message}`);
  } finally {
    await fh.close();
  }
}
