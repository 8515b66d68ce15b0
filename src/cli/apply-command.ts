/** `runner apply RUN_ID`: the run's change into the project's checkout, uncommitted. */
import { applyRun } from '../delivery/apply.js';
import { deliverySource } from '../delivery/source.js';
import { readRun, writeRun } from '../run/records.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';

export async function applyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('apply', args, { home: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home);
  const rec = await readRun(home.runs, positionals[0]!);
  const { files } = await applyRun(await deliverySource(rec), home.runs);
  rec.delivered = { how: 'apply', at: new Date().toISOString() };
  await writeRun(home.runs, rec);
  process.stdout.write(`applied run ${rec.runId} to ${rec.project} as uncommitted changes (${files.length} file${files.length === 1 ? '' : 's'}); review with git diff, then commit\n`);
  return 0;
}
