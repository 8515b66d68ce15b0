/** `runner logs RUN_ID [--step ID] [--follow]`: a run's step output, as the steps printed it (masked). */
import path from 'node:path';
import { UsageError } from '../common/errors.js';
import { LogCursor } from '../run/log-cursor.js';
import { readRun, runDir } from '../run/records.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';

export async function logsCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    'logs',
    args,
    { step: { type: 'string' }, follow: { type: 'boolean', short: 'f', default: false }, home: { type: 'string' } },
    ['RUN_ID'],
  );
  const home = await openHome(values.home, { quiet: true });
  const runId = positionals[0]!;
  const cursor = new LogCursor(path.join(runDir(home.runs, runId), 'steps'));
  const first = await readRun(home.runs, runId);
  if (values.step && first.status !== 'running' && !(await cursor.steps(first)).includes(values.step)) {
    throw new UsageError(`logs: run ${runId} has no log for step ${values.step}; steps: ${(await cursor.steps(first)).join(', ') || 'none'}`);
  }
  const print = async (): Promise<boolean> => {
    const rec = await readRun(home.runs, runId);
    for (const l of await cursor.read(rec, values.step)) process.stdout.write(values.step ? `${l.line}\n` : `[${l.step}] ${l.line}\n`);
    return rec.status === 'running';
  };
  let live = await print();
  while (values.follow && live) {
    await new Promise((r) => setTimeout(r, 300));
    live = await print();
  }
  if (values.follow) await print();
  return 0;
}
