/**
 * `runner gc [RUN_ID...] [--yes] [--home DIR]`: removes the worktrees runs kept (a hook
 * that failed, --keep-workspace, work that could not be saved) once those runs
 * have ended; `runner gc --pool [--yes]`, the prepared worktrees of the pool
 * (worktree-pool.ts). Without --yes it lists them. Works as root on any owner's
 * project: the tree is removed by the runner, git's bookkeeping by git as the
 * project's owner (a pasted `git worktree remove` fails there on ownership).
 */
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../common/errors.js';
import { Git } from '../git/git.js';
import { writeRun } from '../run/records.js';
import { inspectProject } from '../workspace/project.js';
import { removeTree } from '../workspace/remove-tree.js';
import { parseFlags } from './args.js';
import { openHomeWithRuns } from './context.js';
import { printTable } from './table.js';

export async function gcCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('gc', args, { yes: { type: 'boolean', default: false }, pool: { type: 'boolean', default: false }, home: { type: 'string' } }, 'any');
  const only = new Set(positionals);
  const { home, runs } = await openHomeWithRuns(values.home);
  if (values.pool) return emptyPool(home.pool, values.yes);
  const kept = [];
  for (const r of runs) {
    if (only.size && !only.has(r.runId)) continue;
    // a run still cleaning up (its runner alive: recovery finished the others) is left to it
    if (!r.keptWorkspace || !r.worktree || r.status === 'running' || r.cleanup || r.workspace !== 'git_worktree') continue;
    // Only a worktree of the home's own, a direct child of worktrees/, is ever removed.
    if (path.dirname(r.worktree) !== home.worktrees) continue;
    if (!(await lstat(r.worktree).catch(() => undefined))?.isDirectory()) continue;
    kept.push(r);
  }
  if (!kept.length) {
    process.stdout.write(`no kept worktrees in ${home.worktrees}\n`);
    return 0;
  }
  printTable([['RUN', 'PIPELINE', 'STATUS', 'WORKTREE'], ...kept.map((r) => [r.runId, r.pipeline, r.status, r.worktree!])]);
  if (!values.yes) {
    process.stdout.write(`${kept.length} kept worktree(s) would be removed (their branches stay): run again with --yes\n`);
    return 0;
  }
  let failed = 0;
  for (const r of kept) {
    try {
      await removeTree(r.worktree!);
      const project = await inspectProject((who) => new Git(who), r.project).catch(() => undefined);
      if (project) await new Git({ uid: project.uid, gid: project.gid }).run(['worktree', 'prune'], { cwd: project.root, gitDir: project.commonDir, allowFail: true });
      r.keptWorkspace = false;
      await writeRun(home.runs, r);
    } catch (err) {
      failed++;
      process.stderr.write(`runner: could not remove ${r.worktree}: ${errorMessage(err)}\n`);
    }
  }
  process.stdout.write(`removed ${kept.length - failed} worktree(s); their branches are kept\n`);
  return failed ? 1 : 0;
}

/** The pool's slots, removed with --yes (git's bookkeeping pruned as each repository's owner). */
async function emptyPool(root: string, yes: boolean): Promise<number> {
  const slots: Array<{ slot: string; commonDir: string | undefined }> = [];
  for (const key of await readdir(root).catch(() => [] as string[])) {
    for (const name of await readdir(path.join(root, key)).catch(() => [] as string[])) {
      const slot = path.join(root, key, name);
      const link = await readFile(path.join(slot, '.git'), 'utf8').catch(() => '');
      const admin = /^gitdir: (.+)\n?$/.exec(link)?.[1];
      slots.push({ slot, commonDir: admin ? path.dirname(path.dirname(path.resolve(slot, admin))) : undefined });
    }
  }
  if (!slots.length) {
    process.stdout.write(`no prepared worktrees in ${root}\n`);
    return 0;
  }
  printTable([['WORKTREE', 'REPOSITORY'], ...slots.map((s) => [s.slot, s.commonDir ?? '?'])]);
  if (!yes) {
    process.stdout.write(`${slots.length} prepared worktree(s) would be removed (RUNNER_WORKTREE_POOL=0 stops making them): run again with --yes\n`);
    return 0;
  }
  for (const s of slots) {
    await removeTree(s.slot);
    const st = s.commonDir ? await stat(s.commonDir).catch(() => undefined) : undefined;
    if (st) await new Git({ uid: st.uid, gid: st.gid }).run(['worktree', 'prune'], { cwd: s.commonDir!, gitDir: s.commonDir!, allowFail: true });
  }
  process.stdout.write(`removed ${slots.length} prepared worktree(s)\n`);
  return 0;
}
