/** Reads a pipeline file from disk and parses it (see parse.ts). */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { PipelineError } from '../common/errors.js';
import { parsePipeline } from './parse.js';
import type { PipelineFile } from './schema.js';

export interface LoadedPipeline {
  /** the file as the user named it, for messages */
  file: string;
  /** its directory, absolute: project.path is relative to it */
  dir: string;
  pipeline: PipelineFile;
}

export async function loadPipeline(file: string): Promise<LoadedPipeline> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : (err as Error).message;
    throw new PipelineError(file, [{ path: '', message: `cannot read the pipeline file: ${why}` }]);
  }
  return { file, dir: path.dirname(path.resolve(file)), pipeline: parsePipeline(text, file) };
}
