/**
 * Start an agent task (start_agent_task): a project under the server's project folders, a prompt,
 * an agent preset and an optional verify command become a pipeline file the
 * runner writes under the home (mcp-tasks/), started like any other: its run
 * is recorded, followed, diffed and delivered the same way.
 */
import { randomBytes } from 'node:crypto';
import { mkdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { writeFileAtomic } from '../common/atomic-write.js';
import { RunnerError } from '../common/errors.js';
import { loadPipeline } from '../pipeline/load.js';
import type { Caller, StartDoor } from './door.js';
import { within } from './folders.js';
import { taskPipeline, type TaskAgent } from './task-pipeline.js';

export async function startAgentTask(b: StartDoor & Pick<Caller, 'startedBy'>, a: { project: string; prompt: string; agent: TaskAgent; verify?: string | undefined }): Promise<Record<string, unknown>> {
  const project = await within(a.project, b.projectDirs, 'project', '--project');
  const git = await stat(path.join(project, '.git')).then(
    () => true,
    () => false,
  );
  // A plain folder would be worked on in place: the user's files changed before anyone reviewed anything.
  if (!git) throw new RunnerError('not_a_repository', `${project} is not a git repository: an agent task works on a branch of a repository, never on the folder itself. Ask the user to run git init and commit there first`);
  const name = `task-${randomBytes(4).toString('hex')}`;
  const dir = path.join(b.home, 'mcp-tasks');
  await mkdir(dir, { recursive: true, mode: 0o755 });
  const file = path.join(dir, `${name}.yaml`);
  await writeFileAtomic(file, taskPipeline({ name, project, agent: a.agent, verify: a.verify, baseUrl: b.agentBaseUrl }));
  const loaded = await loadPipeline(file);
  const runId = await b.start(loaded, { task: a.prompt }, b.startedBy);
  return {
    runId,
    pipeline: name,
    pipelineFile: file,
    project,
    agent: a.agent,
    ...(a.verify ? { verify: a.verify } : {}),
    next: 'wait_for_run, then run_diff, then merge_run',
  };
}
