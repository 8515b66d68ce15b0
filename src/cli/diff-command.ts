/**
 * `runner diff RUN_ID [--raw]`: the run's whole change against its base, kept
 * after its worktree is gone. The patch holds step-made text: its control
 * characters are shown visibly (tabs and line ends kept) unless --raw, which
 * gives the exact bytes (`runner diff ID --raw | git apply`).
 */
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { StringDecoder } from 'node:string_decoder';
import { visible, visibleLines } from '../common/visible.js';
import { patchOf } from '../runs/diff.js';
import { cliDoor } from '../runs/door.js';
import { showRecord } from '../runs/show.js';
import { parseFlags } from './args.js';
import { changeLines } from './change-lines.js';
import { openHome } from './context.js';

export async function diffCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('diff', args, { raw: { type: 'boolean', default: false }, home: { type: 'string' } }, ['RUN_ID']);
  const home = await openHome(values.home, { quiet: true });
  const runId = positionals[0]!;
  const door = cliDoor(home);
  const rec = await showRecord(door, runId);
  if (rec.workspace === 'persistent_directory') {
    // No git, no patch: the changes each step made, as the record lists them.
    const lines = rec.steps.flatMap((s) => (s.changes ? changeLines(s.id, s.changes) : []));
    process.stdout.write(`${(lines.length ? lines : [`run ${runId} changed nothing${rec.status === 'running' ? ' yet' : ''}`]).map(values.raw ? (l) => l : visible).join('\n')}\n`);
    return 0;
  }
  const { file } = await patchOf(door, runId); // no_diff, with why, when it has none
  if ((await stat(file)).size === 0) {
    // an empty patch printed nothing at all: say it, on stderr (stdout stays the patch, empty, for `| git apply`)
    const live = rec.status === 'running' || rec.status === 'awaiting_approval';
    process.stderr.write(`run ${runId} changed nothing${live ? ' so far' : ''}: its branch holds no change against its base\n`);
    return 0;
  }
  if (values.raw) await pipeline(createReadStream(file), process.stdout, { end: false });
  else await pipeline(createReadStream(file), visibleStream(), process.stdout, { end: false });
  return 0;
}

/** Bytes in, the same text out with its control characters made visible (UTF-8 kept whole across chunks). */
function visibleStream(): Transform {
  const decoder = new StringDecoder('utf8');
  return new Transform({
    transform(chunk: Buffer, _enc, done) {
      done(null, visibleLines(decoder.write(chunk)));
    },
    flush(done) {
      done(null, visibleLines(decoder.end()));
    },
  });
}
