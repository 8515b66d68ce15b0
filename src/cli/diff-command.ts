/** `runner diff RUN_ID`: the run's whole change against its base, kept after its worktree is gone. */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { RunnerError } from '../common/errors.js';
import { readRun, runDir } from '../run/records.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';

export async function diffCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('diff', args, { home: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home, { quiet: true });
  const runId = positionals[0]!;
  const rec = await readRun(home.runs, runId);
  const file = path.join(runDir(home.runs, runId), 'diff.patch');
  if (!(await stat(file).catch(() => undefined))) {
    const why =
      rec.workspace === 'persistent_directory'
        ? 'it worked on a persistent directory; its changes are listed in runner runs show'
        : rec.status === 'running'
          ? 'it is still running'
          : 'it ended before its change was recorded';
    throw new RunnerError('no_diff', `run ${runId} has no diff: ${why}`);
  }
  await pipeline(createReadStream(file), process.stdout, { end: false });
  return 0;
}
