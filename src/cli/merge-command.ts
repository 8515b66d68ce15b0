/** `runner merge RUN_ID [--into BRANCH] [--squash] [--allow-empty] [--push]` and `runner merge --all RUN_ID...` */
import { visible } from '../common/visible.js';
import { errorMessage, UsageError } from '../common/errors.js';
import { DeliveryRefused } from '../delivery/refusal.js';
import { mergeRunOf } from '../runs/deliver.js';
import { cliDoor } from '../runs/door.js';
import { cliActor } from './os-user.js';
import { deliverySource } from '../delivery/source.js';
import { pushBranch } from '../git/push.js';
import { loadPipeline } from '../pipeline/load.js';
import { readRun } from '../run/records.js';
import type { RunnerHome } from '../workspace/home.js';
import { parseFlags } from './args.js';
import { openHome } from './context.js';
import { printTable } from './table.js';

export async function mergeCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags(
    'merge',
    args,
    {
      into: { type: 'string' },
      squash: { type: 'boolean', default: false },
      'allow-empty': { type: 'boolean', default: false },
      push: { type: 'boolean', default: false },
      all: { type: 'boolean', default: false },
      home: { type: 'string' },
    },
    'any',
  );
  if (positionals.length === 0) throw new UsageError('merge: expected RUN_ID (or --all RUN_ID...) (runner --help)');
  if (positionals.length > 1 && !values.all) throw new UsageError('merge: several runs need --all (runner --help)');
  const home = await openHome(values.home);
  const opts = { into: values.into, squash: values.squash === true, allowEmpty: values['allow-empty'] === true, push: values.push === true };
  if (!values.all) {
    const line = await mergeOne(home, positionals[0]!, opts);
    process.stdout.write(`${visible(line)}\n`);
    return 0;
  }
  // A swarm of runs into one target, one after another; each outcome reported.
  const rows: string[][] = [['RUN', 'RESULT', 'DETAIL']];
  let failures = 0;
  for (const runId of positionals) {
    try {
      rows.push([runId, 'merged', await mergeOne(home, runId, { ...opts, push: false })]);
    } catch (err) {
      failures++;
      rows.push([runId, err instanceof DeliveryRefused ? err.reason : 'error', errorMessage(err)]);
    }
  }
  printTable(rows);
  if (opts.push && failures < positionals.length) await pushTarget(home, positionals[0]!, opts.into);
  return failures ? 1 : 0;
}

async function mergeOne(home: RunnerHome, runId: string, o: { into: string | undefined; squash: boolean; allowEmpty: boolean; push: boolean }): Promise<string> {
  const { rec, ...r } = await mergeRunOf(cliDoor(home), runId, { into: o.into, squash: o.squash, allowEmpty: o.allowEmpty }, cliActor());
  let line = `merged ${rec.branch} into ${r.into} (${r.commit.slice(0, 10)}${o.squash ? ', squashed' : ''})${r.movedCheckout ? '; the checkout moved with it' : ''}; committed as ${r.author.name} <${r.author.email}>${r.author.configured ? '' : ' (the project has no git identity: set user.name and user.email there)'}`;
  if (o.push) line += `; ${await pushTarget(home, runId, r.into)}`;
  return line;
}

async function pushTarget(home: RunnerHome, runId: string, into: string | undefined): Promise<string> {
  const rec = await readRun(home.runs, runId);
  const src = await deliverySource(rec);
  const target = into ?? rec.delivered?.into;
  if (!target) return 'nothing pushed';
  const remote = await loadPipeline(rec.pipelineFile).then((l) => l.pipeline.project.remote).catch(() => 'origin');
  const out = await pushBranch(src.git, src.project, remote, target, 'always');
  return out.pushed ? `pushed ${target} to ${remote}` : `push of ${target} failed: ${out.reason === 'push_failed' ? out.error : out.reason}`;
}
