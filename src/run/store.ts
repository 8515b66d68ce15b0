/**
 * The files of one run in the runner home: `runs/<runId>/run.json` (written
 * atomically), `events.jsonl` (structured events, through winston) and
 * `steps/<id>.log` (each step's output, masked) and `calls.jsonl` (the model calls
 * gateways metered).
 */
import { createWriteStream, type WriteStream } from 'node:fs';
import { chown, mkdir } from 'node:fs/promises';
import { finished } from 'node:stream/promises';
import path from 'node:path';
import winston from 'winston';
import { writeFileAtomic } from '../common/atomic-write.js';
import { writeAndDrain } from '../common/drain.js';
import type { Masker } from '../common/mask.js';
import { childPath, verifyDirectory } from '../workspace/names.js';
import { readRun } from './records.js';
import { changeCount, cutChanges, MAX_RECORDED_CHANGES, type ChangeList } from '../workspace/snapshot.js';
import type { RunRecord } from './record.js';
import { StepLog } from './step-log.js';

/** The name of the pipeline file's copy in a run's directory. */
export const PIPELINE_COPY = 'pipeline.yaml';

export class RunStore {
  private readonly events: winston.Logger;
  private readonly eventsFile: winston.transport;

  private constructor(
    readonly dir: string,
    private readonly masker: Masker,
  ) {
    this.eventsFile = new winston.transports.File({ filename: path.join(dir, 'events.jsonl') });
    this.events = winston.createLogger({
      level: 'debug',
      format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
      transports: [this.eventsFile],
    });
  }

  static async create(runsRoot: string, runId: string, masker: Masker): Promise<RunStore> {
    const dir = await childPath(runsRoot, runId, 'run id');
    await mkdir(dir, { mode: 0o755 }).catch(async (err: NodeJS.ErrnoException) => {
      // A run runner serve accepted has its queued record there already; nothing else may be.
      const queued = err.code === 'EEXIST' && (await readRun(runsRoot, runId).catch(() => undefined))?.status === 'queued';
      if (!queued) throw err;
    });
    await verifyDirectory(dir);
    await mkdir(path.join(dir, 'steps'), { recursive: true });
    await mkdir(path.join(dir, 'io'), { recursive: true });
    return new RunStore(dir, masker);
  }

  /** A run's directory as an earlier start of it left it (a resume, src/run/continuation.ts). */
  static async reopen(runsRoot: string, runId: string, masker: Masker): Promise<RunStore> {
    const dir = await childPath(runsRoot, runId, 'run id');
    await verifyDirectory(dir);
    await mkdir(path.join(dir, 'steps'), { recursive: true });
    await mkdir(path.join(dir, 'io'), { recursive: true });
    return new RunStore(dir, masker);
  }

  /** The pipeline file's text as the run read it, kept beside its record (`pipeline.yaml`); its name there. */
  async keepPipeline(text: string): Promise<string> {
    await writeFileAtomic(path.join(this.dir, PIPELINE_COPY), this.masker.mask(text));
    return PIPELINE_COPY;
  }

  event(type: string, data: Record<string, unknown> = {}, level: 'info' | 'warn' | 'error' = 'info'): void {
    this.events.log(level, type, JSON.parse(this.masker.mask(JSON.stringify(data))));
  }

  async writeRecord(record: RunRecord): Promise<void> {
    await writeFileAtomic(path.join(this.dir, 'run.json'), this.masker.mask(JSON.stringify(record, null, 2)) + '\n');
  }

  stepLog(stepId: string): StepLog {
    return new StepLog(path.join(this.dir, 'steps', `${stepId}.log`));
  }

  /** An agent step's events as its CLI wrote them, one JSON object a line (`runner logs --transcript`). */
  stepTranscriptPath(stepId: string): string {
    return path.join(this.dir, 'steps', `${stepId}.transcript.jsonl`);
  }

  /**
   * A persistent directory step's changes: all of them in `steps/<id>.changes.jsonl`
   * (one masked JSON object a line, `{"kind": "added", "path": …}`) when there are
   * more than a record lists, and the record's list cut to its first ones.
   */
  async recordChanges(stepId: string, changes: ChangeList): Promise<ChangeList> {
    if (changeCount(changes) <= MAX_RECORDED_CHANGES) return changes;
    const rel = path.join('steps', `${stepId}.changes.jsonl`);
    const out = createWriteStream(path.join(this.dir, rel), { mode: 0o644 });
    const done = finished(out);
    for (const kind of ['added', 'modified', 'deleted'] as const) {
      const list = changes[kind];
      for (let i = 0; i < list.length; i += 1000) {
        const text = list
          .slice(i, i + 1000)
          .map((c) => this.masker.mask(JSON.stringify({ kind, ...c })))
          .join('\n');
        await writeAndDrain(out, `${text}\n`);
      }
    }
    out.end();
    await done;
    return cutChanges(changes, MAX_RECORDED_CHANGES, rel);
  }

  /** One model call a step's gateway metered, appended to `calls.jsonl` (one masked JSON object a line). */
  recordCall(call: Record<string, unknown>): void {
    this.calls ??= createWriteStream(path.join(this.dir, 'calls.jsonl'), { flags: 'a', mode: 0o644 });
    this.calls.write(`${this.masker.mask(JSON.stringify({ at: new Date().toISOString(), ...call }))}\n`);
  }

  private calls: WriteStream | undefined;

  /** Where a step's work is saved when it cannot be committed. */
  stepPatchPath(stepId: string): string {
    return path.join(this.dir, 'steps', `${stepId}.patch`);
  }

  /** A directory only this step's container sees, owned by the step's user, for `$RUNNER_OUTPUT`. */
  async stepIoDir(stepId: string, uid: number, gid: number): Promise<string> {
    const dir = path.join(this.dir, 'io', stepId);
    await mkdir(dir, { mode: 0o700 });
    await chown(dir, uid, gid);
    return dir;
  }

  async close(): Promise<void> {
    if (this.calls) {
      const calls = this.calls;
      await new Promise<void>((resolve) => calls.end(resolve));
    }
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2000);
      this.eventsFile.on('finish', () => {
        clearTimeout(timer);
        resolve();
      });
      this.events.end();
    });
  }
}
