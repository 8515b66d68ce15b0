/** `runner apply RUN_ID`: the run's change into the project's checkout, uncommitted. */
import { applyRunOf } from '../runs/deliver.js';
import { cliDoor } from '../runs/door.js';
import { cliActor } from './os-user.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';

export async function applyCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('apply', args, { home: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home);
  const { rec, files } = await applyRunOf(cliDoor(home), positionals[0]!, cliActor());
  process.stdout.write(`applied run ${rec.runId} to ${rec.project} as uncommitted changes (${files.length} file${files.length === 1 ? '' : 's'}); review with git diff, then commit\n`);
  return 0;
}
