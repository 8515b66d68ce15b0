/**
 * An agent step's events, live: the file its CLI writes them to (in the
 * step's io directory, so the step controls it: opened without following a
 * symlink, a regular file only, read in bounded pieces) is followed while the
 * step runs. Each whole line is kept, as it is, in the step's transcript
 * (bounded), and handed on as the events of our one shape it holds (its
 * preset's parser, in one `EventReader` for the step); the end is read once
 * the step has stopped.
 */
import { constants, createWriteStream, type WriteStream } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import { EventReader, type AgentEvent } from '../agents/events.js';
import type { AgentPreset } from '../agents/preset.js';

const TICK_MS = 250;
/** read per tick at most: a step that pours out events cannot stall the runner */
const MAX_READ = 1024 * 1024;
/** a line longer than this is no event of a CLI's: kept in the transcript, not rendered */
const MAX_EVENT = 1024 * 1024;
/** the transcript's bound, like a log's */
export const MAX_TRANSCRIPT = 64 * 1024 * 1024;

export interface AgentFollow {
  /** reads what is left, closes the transcript */
  stop(): Promise<void>;
}

export function followAgentEvents(file: string, transcriptPath: string, preset: AgentPreset, onEvent: (event: AgentEvent) => void, onProblem: (message: string) => void): AgentFollow {
  const reader = new EventReader(preset.name, (line) => preset.events(line));
  let fh: FileHandle | undefined;
  let position = 0;
  let pending: Buffer[] = [];
  let pendingSize = 0;
  let written = 0;
  let stopped = false;
  let reading: Promise<void> = Promise.resolve();
  let said = false;
  const transcript: WriteStream = createWriteStream(transcriptPath, { flags: 'w', mode: 0o644 });
  transcript.on('error', (err) => onProblem(`the transcript could not be written: ${err.message}`));

  const line = (bytes: Buffer) => {
    if (written < MAX_TRANSCRIPT) {
      const room = MAX_TRANSCRIPT - written;
      transcript.write(bytes.length + 1 <= room ? Buffer.concat([bytes, Buffer.from('\n')]) : bytes.subarray(0, room));
      written += Math.min(room, bytes.length + 1);
    }
    if (bytes.length > MAX_EVENT) return;
    let v: unknown;
    try {
      v = JSON.parse(bytes.toString('utf8'));
    } catch {
      return; // not an event (a warning the CLI printed)
    }
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) for (const e of reader.event(v as Record<string, any>)) onEvent(e);
  };

  const readSome = async (all: boolean): Promise<void> => {
    if (!fh) {
      try {
        fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT' && !said) {
          said = true;
          onProblem(`the agent's event file could not be followed (${code})`);
        }
        return;
      }
      if (!(await fh.stat()).isFile()) {
        await fh.close();
        fh = undefined;
        if (!said) onProblem("the agent's event file is not a regular file: it is not followed");
        said = true;
        return;
      }
    }
    for (let rounds = 0; all ? rounds < 64 : rounds < 1; rounds++) {
      const buf = Buffer.alloc(MAX_READ);
      const { bytesRead } = await fh.read(buf, 0, MAX_READ, position);
      if (bytesRead === 0) return;
      position += bytesRead;
      let chunk = buf.subarray(0, bytesRead);
      let nl: number;
      while ((nl = chunk.indexOf(0x0a)) >= 0) {
        pending.push(chunk.subarray(0, nl));
        line(Buffer.concat(pending));
        pending = [];
        pendingSize = 0;
        chunk = chunk.subarray(nl + 1);
      }
      if (chunk.length && pendingSize < MAX_EVENT + 1) {
        pending.push(Buffer.from(chunk));
        pendingSize += chunk.length;
      }
    }
  };

  const tick = () => {
    if (stopped) return;
    reading = reading.then(() => readSome(false)).catch((err: Error) => onProblem(`following the agent's events: ${err.message}`));
    void reading.then(() => {
      if (!stopped) timer = setTimeout(tick, TICK_MS);
    });
  };
  let timer: NodeJS.Timeout = setTimeout(tick, TICK_MS);

  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await reading;
      await readSome(true).catch((err: Error) => onProblem(`following the agent's events: ${err.message}`));
      if (pendingSize) line(Buffer.concat(pending));
      await fh?.close().catch(() => undefined);
      await new Promise<void>((r) => transcript.end(r));
    },
  };
}
