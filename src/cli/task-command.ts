/** `runner task ls [--json]` and `runner task rm TASK_ID` */
import { visibleLines } from '../common/visible.js';
import path from 'node:path';
import { UsageError, WorkspaceError } from '../common/errors.js';
import { Git } from '../git/git.js';
import { loadPipeline } from '../pipeline/load.js';
import { runHook, hookEnv, DEFAULT_HOOK_TIMEOUT_MS } from '../run/hooks.js';
import { canonicalHome, RunnerHome } from '../workspace/home.js';
import { lockWorkspace } from '../workspace/dir-lock.js';
import { inspectProject } from '../workspace/project.js';
import { checkTaskId, listTasks, readTaskRecord, removeTask, taskLockKey, uncommittedChanges } from '../workspace/task-worktree.js';
import { parseFlags } from './args.js';
import { printTable } from './table.js';

export async function taskCommand(args: string[]): Promise<number> {
  const [sub, ...rest] = args;
  if (sub === 'ls') return taskLs(rest);
  if (sub === 'rm') return taskRm(rest);
  throw new UsageError(`task: expected ls or rm, got ${sub ?? 'nothing'} (runner --help)`);
}

async function taskLs(args: string[]): Promise<number> {
  const { values } = parseFlags('task ls', args, { json: { type: 'boolean', default: false }, home: { type: 'string' } }, []);
  const home = new RunnerHome(await canonicalHome(values.home));
  const tasks = await listTasks(home.tasks);
  if (values.json) {
    process.stdout.write(`${JSON.stringify(tasks)}\n`);
    return 0;
  }
  if (tasks.length === 0) {
    process.stdout.write(`no tasks in ${home.tasks}\n`);
    return 0;
  }
  printTable([['TASK', 'BRANCH', 'RUNS', 'LAST RUN', 'PROJECT'], ...tasks.map((t) => [t.taskId, t.branch, String(t.runs), t.lastRunAt ?? '-', t.project])]);
  return 0;
}

async function taskRm(args: string[]): Promise<number> {
  const { values, positionals } = parseFlags('task rm', args, { home: { type: 'string' }, force: { type: 'boolean', default: false } }, ['TASK_ID']);
  const taskId = checkTaskId(positionals[0]!);
  const home = new RunnerHome(await canonicalHome(values.home));
  const rec = await readTaskRecord(path.join(home.tasks, `${taskId}.json`));
  if (!rec) throw new UsageError(`task rm: no task ${taskId} in ${home.tasks} (runner task ls)`);
  const unlock = await lockWorkspace(taskLockKey(home.tasks, taskId), `task ${taskId}`, {
    noWait: true,
    signal: new AbortController().signal,
    onWait: () => undefined,
  });
  try {
    const project = await inspectProject((who) => new Git(who), rec.project);
    const git = new Git({ uid: project.uid, gid: project.gid });
    const pending = values.force ? '' : await uncommittedChanges(git, project, home.tasks, rec);
    if (pending) {
      throw new WorkspaceError(
        'task_uncommitted',
        `task ${taskId}'s worktree holds changes no commit has (${pending.split('\n').slice(0, 5).join('; ')}): commit or copy them, or remove it anyway with --force`,
      );
    }
    await beforeRemoveHook(rec.pipelineFile, path.join(home.tasks, taskId), taskId, project);
    await removeTask(git, project, home.tasks, rec);
  } finally {
    await unlock();
  }
  process.stdout.write(`removed task ${taskId}'s worktree; branch ${rec.branch} is kept in ${rec.project}\n`);
  return 0;
}

/** The task's pipeline's before_remove hook, when the file still loads; its failure is reported and ignored. */
async function beforeRemoveHook(pipelineFile: string | null, dir: string, taskId: string, owner: { uid: number; gid: number }): Promise<void> {
  if (!pipelineFile) return;
  const loaded = await loadPipeline(pipelineFile).catch(() => undefined);
  const script = loaded?.pipeline.hooks?.before_remove;
  if (!script?.trim()) return;
  const r = await runHook({
    name: 'before_remove',
    script,
    cwd: dir,
    timeoutMs: loaded?.pipeline.hooks?.timeout ?? DEFAULT_HOOK_TIMEOUT_MS,
    user: owner,
    env: hookEnv({ RUNNER_RUN_ID: '', RUNNER_WORKSPACE: dir, RUNNER_ATTEMPT: '', RUNNER_TASK_RUN: '', RUNNER_TASK_ID: taskId }, owner),
  });
  if (r.output) process.stderr.write(visibleLines(r.output).replace(/^/gm, '[hook:before_remove] ').replace(/\[hook:before_remove\] $/, ''));
  if (!r.ok) process.stderr.write(`runner: warning: hook before_remove ${r.timedOut ? 'timed out' : `exited ${r.exitCode}`}; ignored\n`);
}
