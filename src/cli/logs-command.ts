/**
 * `runner logs RUN_ID [--step ID] [--follow] [--raw]`: a run's step output, as
 * the steps printed it (masked), read in chunks and written as fast as the
 * reader takes it. Control characters are shown visibly unless --raw.
 * `--step ID --transcript`: an agent step's events as its CLI wrote them (its
 * raw stream, the record; control characters shown unless --raw);
 * `--transcript --json`: the same events in our one shape whichever CLI ran
 * (src/agents/events.ts), one JSON object a line.
 */
import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { writeAndDrain } from '../common/drain.js';
import { RunnerError, UsageError } from '../common/errors.js';
import { visible } from '../common/visible.js';
import { shownEvent, transcriptEvents } from '../agents/transcript.js';
import { logOfStep } from '../run/log-cursor.js';
import { cliDoor, type Door } from '../runs/door.js';
import { openLog, transcriptFile } from '../runs/logs.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';

export async function logsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    'logs',
    args,
    {
      step: { type: 'string' },
      follow: { type: 'boolean', short: 'f', default: false },
      raw: { type: 'boolean', default: false },
      transcript: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      home: { type: 'string' },
    },
    ['RUN_ID'],
  );
  const home = await openHome(values.home, { quiet: true });
  const runId = positionals[0]!;
  if (values.json && !values.transcript) throw new UsageError('logs: --json goes with --transcript (an agent step\'s events, one JSON object a line)');
  if (values.json && values.raw) throw new UsageError('logs: --json gives the events in one shape, --raw as the CLI wrote them: give one of them');
  const door = cliDoor(home);
  if (values.transcript) return printTranscript(door, runId, values.step, values.raw === true, values.json === true);
  const { cursor, read } = await openLog(door, runId, values.step);
  const show = values.raw ? (s: string) => s : visible;
  // With --step, each run of the step (an attempt, an instance) is marked where its log starts.
  let lastShown: string | undefined;
  const mark = (name: string, all: string[]): string => {
    if (name === lastShown) return '';
    lastShown = name;
    return all.filter((n) => logOfStep(n, values.step!)).length > 1 || name !== values.step ? `── ${name} ──\n` : '';
  };
  /** Everything written so far; false when stdout went away (a pager quit). */
  const printAll = async (): Promise<{ live: boolean; open: boolean }> => {
    const rec = await read();
    for (;;) {
      const batch = await cursor.read(rec, values.step);
      const names = values.step ? await cursor.steps(rec) : [];
      const text = batch.lines.map((l) => (values.step ? `${mark(l.step, names)}${show(l.line)}\n` : `[${l.step}] ${show(l.line)}\n`)).join('');
      if (text && !(await writeAndDrain(process.stdout, text))) return { live: false, open: false };
      if (!batch.more) break;
    }
    return { live: rec.status === 'running', open: true };
  };
  let state = await printAll();
  while (values.follow && state.live) {
    await new Promise((r) => setTimeout(r, 300));
    state = await printAll();
  }
  if (values.follow && state.open) await printAll();
  return 0;
}

/** An agent step's transcript, a JSON event a line: as its CLI wrote them (control characters shown unless raw), or in our one shape (json). */
async function printTranscript(door: Door, runId: string, step: string | undefined, raw: boolean, json: boolean): Promise<number> {
  if (!step) throw new UsageError('logs: --transcript goes with --step ID (an agent step of the run)');
  const file = await transcriptFile(door, runId, step);
  const input = createReadStream(file);
  const opened = await new Promise<NodeJS.ErrnoException | undefined>((resolve) => {
    input.once('open', () => resolve(undefined));
    input.once('error', (err) => resolve(err));
  });
  if (opened) {
    if (opened.code === 'ENOENT') throw new UsageError(`logs: run ${runId} has no transcript for step ${step}: only an agent preset's steps have one`);
    throw new RunnerError('no_log', `logs: the transcript of ${step} could not be read (${opened.code})`);
  }
  try {
    if (json) {
      for await (const event of transcriptEvents(input)) {
        if (!(await writeAndDrain(process.stdout, `${JSON.stringify(shownEvent(event))}\n`))) break;
      }
      return 0;
    }
    for await (const line of createInterface({ input, crlfDelay: Infinity })) {
      if (!(await writeAndDrain(process.stdout, `${raw ? line : visible(line)}\n`))) break;
    }
  } finally {
    input.destroy();
  }
  return 0;
}
