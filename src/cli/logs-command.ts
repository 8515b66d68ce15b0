/** `runner logs RUN_ID [--step ID] [--follow]`: a run's step output, as the steps printed it (masked). */
import { open, readdir } from 'node:fs/promises';
import path from 'node:path';
import { UsageError } from '../common/errors.js';
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
  const dir = path.join(runDir(home.runs, runId), 'steps');
  await readRun(home.runs, runId); // a clear error for an unknown run
  const offsets = new Map<string, number>();
  const print = async (): Promise<boolean> => {
    const rec = await readRun(home.runs, runId);
    const order = [...rec.steps.map((s) => s.id), ...(rec.current ? [rec.current.id] : [])];
    const files = (await readdir(dir).catch(() => [] as string[])).filter((f) => f.endsWith('.log')).map((f) => f.slice(0, -4));
    const ids = [...order.filter((id) => files.includes(id)), ...files.filter((f) => !order.includes(f))];
    if (values.step && !ids.includes(values.step) && rec.status !== 'running') {
      throw new UsageError(`logs: run ${runId} has no log for step ${values.step}; steps: ${ids.join(', ') || 'none'}`);
    }
    for (const id of ids) {
      if (values.step && id !== values.step) continue;
      const from = offsets.get(id) ?? 0;
      const fh = await open(path.join(dir, `${id}.log`), 'r');
      try {
        const { size } = await fh.stat();
        if (size > from) {
          const buf = Buffer.alloc(size - from);
          await fh.read(buf, 0, buf.length, from);
          const text = buf.toString('utf8');
          const upTo = text.lastIndexOf('\n') + 1; // whole lines only
          if (upTo > 0) {
            const prefix = values.step ? '' : `[${id}] `;
            process.stdout.write(text.slice(0, upTo).replace(/^(?=.)/gm, prefix));
            offsets.set(id, from + Buffer.byteLength(text.slice(0, upTo)));
          }
        }
      } finally {
        await fh.close();
      }
    }
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
